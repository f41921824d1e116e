#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# bench/run.sh gives no figure from a failed run: its helpers, sourced
# (BENCH_LIB=1) and run on a tiny cluster, stop the bench with exit 1 and
# "bench: FAIL: ..." when cutsnap load fails (a foreign write breaks the
# total, snapshots fail) or a timed command fails, and print nothing on
# stdout (where the bench's rows go). A healthy run passes its summary on.
. "$(dirname "$0")/lib.sh"

BENCH=$_lib_dir/../../bench/run.sh

# bench_fn CMDS: run CMDS in a bash with the bench's helpers loaded, its
# log in bench.log; stdout in $OUT, stderr in $ERR, status in $RC (and
# returned).
bench_fn () {
	CUTSNAP=$CUTSNAP BENCH_LIB=1 timeout -k 5 60 bash -c '
		. "$1" || exit 3
		LOG=$2/bench.log
		eval "$3"' bench_fn "$BENCH" "$TEST_DIR" "$1" >"$OUT" 2>"$ERR"
	RC=$?
	return $RC
}

a_writes () {
	cs status -c "$CONF" --json | json_get "[a[\"writes\"] for a in d if a[\"agent\"] == \"A\"][0]" /dev/stdin
}
a_writes_above () { [ "$(a_writes)" -gt "$1" ]; }

test_expect_success 'setup: two agents with balances' '
	make_config A B &&
	start_cluster &&
	set_balances A=1000 B=1000
'

test_expect_success 'a healthy load: load_checked passes, its JSON summary kept' '
	bench_fn "load_checked \"\$PWD/ok.json\" -c \"$CONF\" -s 1 --clients 2; echo passed" &&
	expect_eq "$RC" 0 "status" &&
	expect_eq "$(cat "$OUT")" passed "stdout" &&
	json_check "d[\"conserved\"] is True and d[\"transfers\"] > 0" ok.json
'

test_expect_success 'a load whose total is not conserved fails the bench, no figure' '
	bench_fn "load_checked \"\$PWD/bad.json\" -c \"$CONF\" -s 4 --clients 2; echo figure" &
	P=$! && BG_PIDS="$BG_PIDS $P" &&
	w0=$(a_writes) &&
	wait_for 10 a_writes_above $((w0 + 20)) &&
	cs add -c "$CONF" A bal 5 >/dev/null &&
	wait "$P"; rc=$?
	expect_eq "$rc" 1 "bench status" &&
	[ ! -s "$OUT" ] &&
	grep -q "^bench: FAIL: cutsnap load .* (exit 1): " "$ERR" &&
	json_check "d[\"conserved\"] is False" bad.json
'

test_expect_success 'a load whose snapshots fail fails the bench, no figure' '
	echo x >notadir &&
	bench_fn "load_checked \"\$PWD/snap.json\" -c \"$CONF\" -s 1 --clients 2 --snapshot-every 200 -r \"$TEST_DIR/notadir\"; echo figure"
	expect_eq "$RC" 1 "bench status" &&
	[ ! -s "$OUT" ] &&
	grep -q "^bench: FAIL: cutsnap load .*--snapshot-every 200" "$ERR" &&
	json_check "d[\"snapshot_failures\"] > 0 and d[\"snapshots\"] == 0" snap.json
'

test_expect_success 'a failed timed command fails the bench; a good one is timed' '
	bench_fn "v=(); timed v true; timed v false; echo \${#v[@]}"
	expect_eq "$RC" 1 "bench status" &&
	[ ! -s "$OUT" ] &&
	grep -qx "bench: FAIL: exit 1: false" "$ERR" &&
	bench_fn "v=(); timed v true; timed v true; echo \${#v[@]}" &&
	expect_eq "$RC" 0 "bench status" &&
	expect_eq "$(cat "$OUT")" 2 "timings"
'

test_expect_success 'a command failing inside $(ms_of ...) stops the bench too' '
	bench_fn "a=\$(ms_of true); echo \"ok \$a\"; b=\$(ms_of false); echo figure \$b"
	expect_eq "$RC" 1 "bench status" &&
	grep -Eqx "ok [0-9]+" "$OUT" &&
	! grep -q figure "$OUT" &&
	grep -qx "bench: FAIL: exit 1: false" "$ERR"
'

test_expect_success 'RESULTS.md names the exact commit, and a tree with changes as such' '
	bench_fn "commit_line" &&
	head=$(git -C "$_lib_dir/../.." rev-parse HEAD) &&
	grep -Eq "^$head(-dirty: the tree had uncommitted changes| \(clean tree\))" "$OUT" &&
	git clone -q "$_lib_dir/../.." repo-copy &&
	cp "$BENCH" repo-copy/bench/run.sh &&
	git -C repo-copy -c user.name=t -c user.email=t@t commit -q --allow-empty -am "bench as tested" &&
	h=$(git -C repo-copy rev-parse HEAD) &&
	BENCH=$PWD/repo-copy/bench/run.sh bench_fn "commit_line" &&
	expect_eq "$(cat "$OUT")" "$h (clean tree)" "clean" &&
	echo "changed" >>repo-copy/README.md &&
	echo "rewritten" >>repo-copy/bench/RESULTS.md &&
	BENCH=$PWD/repo-copy/bench/run.sh bench_fn "commit_line" &&
	expect_eq "$(cat "$OUT")" "$h-dirty: the tree had uncommitted changes, so these figures are not of $h alone (changed: README.md )" "dirty"
'

test_done

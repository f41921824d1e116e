#!/bin/bash
# snapshot --max-rate RATE and [cluster] snapshot_max_rate: the copy and
# hashing of the recorded files is paced to RATE bytes per second, so a
# snapshot that copies N bytes takes at least N / RATE seconds. Only that
# lower bound is asserted: a loaded machine can only lengthen a run, never
# shorten it, so the check cannot flake (an unpaced copy of these few MiB
# takes milliseconds). The option wins over the config, 0 lifts the limit,
# two paced snapshots at once each keep their own pace, the snapshots
# verify and keep the total, a snapshot whose agents stream their chunks
# over TLS (agents with addr) is paced the same way, and a bad rate is
# refused with exit 2 before anything is created.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

# Many chunks per file, so the workers share the pace.
export CUTSNAP_CHUNK_SIZE=65536

# shellcheck disable=SC2034 # used inside the test bodies
T0='' MS=''

# put_random AGENT KEY KIB: KIB KiB of random bytes as KEY's value.
put_random () {
	head -c $(($3 * 1024)) /dev/urandom >"$TEST_DIR/.rand" &&
	    cs put -c "$CONF" "$1" "$2" - <"$TEST_DIR/.rand" >/dev/null
}

now_ms () { echo $(($(date +%s%N) / 1000000)); }
clock_start () { T0=$(now_ms); }
clock_stop () { MS=$(($(now_ms) - T0)); }

# paced_at_least RATE [FILE]: the snapshot --json in FILE (default $OUT)
# copied at least 1 MiB under max_rate RATE, and the run took at least
# bytes / RATE seconds (MS, measured around the command, so only longer;
# 1% off for the wall clock's slewing against the monotonic one).
paced_at_least () {
	local bytes want
	bytes=$(json_get 'd["chunks"]["bytes"]' "${2:-$OUT}") &&
	expect_eq "$(json_get 'd["chunks"]["max_rate"]' "${2:-$OUT}")" "$1" "max_rate" &&
	[ "$bytes" -ge 1048576 ] || { say "copied only $bytes bytes"; return 1; }
	want=$((bytes * 990 / $1))
	say "copied $bytes bytes at $1 B/s in $MS ms (at least $want ms)"
	[ "$MS" -ge "$want" ] || { say "too fast: $MS ms < $want ms"; return 1; }
}

test_expect_success 'setup: A=100, B=50, 1 MiB of random data in each file' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	put_random A blob 1024 &&
	put_random B blob 1024
'

test_expect_success 'a bad --max-rate is refused with exit 2, nothing created' '
	n=0 &&
	for r in abc 10X 5MB -1 1.5M "" 1K 31K 2048G 99999999999999999999 K; do
		expect_error 2 snapshot -c "$CONF" -r "$REPO" --max-rate "$r" &&
		err_matches "bad --max-rate .*expected bytes per second from 32K to 1024G" &&
		[ ! -e "$REPO" ] || { say "rate [$r]"; return 1; }
		n=$((n + 1))
	done &&
	expect_eq "$n" 11 "bad rates checked"
'

test_expect_success 'a bad snapshot_max_rate is refused with exit 2 naming the line' '
	cp "$CONF" "$TEST_DIR/bad.ini" &&
	sed -i "s/^run_dir = run$/run_dir = run\nsnapshot_max_rate = 10Q/" "$TEST_DIR/bad.ini" &&
	expect_error 2 snapshot -c "$TEST_DIR/bad.ini" -r "$REPO" &&
	err_matches "bad.ini:4: snapshot_max_rate .10Q.: expected bytes per second" &&
	[ ! -e "$REPO" ]
'

test_expect_success '--max-rate 512K: the copy takes at least bytes / rate' '
	clock_start &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --max-rate 512K --json &&
	clock_stop &&
	paced_at_least 524288 &&
	ID=$(json_get "d[\"id\"]") &&
	expect_eq "$(json_get "d[\"status\"]")" complete "status" &&
	expect_ok verify -r "$REPO" "$ID" &&
	expect_eq "$(cut_total "$REPO" "$ID")" 150 "total"
'

test_expect_success 'snapshot_max_rate of the config paces a snapshot without the option' '
	sed -i "s/^run_dir = run$/run_dir = run\nsnapshot_max_rate = 1M/" "$CONF" &&
	put_random A blob2 1536 &&
	clock_start &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --json &&
	clock_stop &&
	paced_at_least 1048576 &&
	expect_ok verify -r "$REPO" "$(json_get "d[\"id\"]")"
'

test_expect_success '--max-rate overrides the config; 0 lifts the limit' '
	put_random B blob2 256 &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --max-rate 0 --json &&
	expect_eq "$(json_get "d[\"chunks\"][\"max_rate\"]")" 0 "max_rate" &&
	expect_eq "$(json_get "d[\"status\"]")" complete "status" &&
	put_random B blob3 256 &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --max-rate 2G --json &&
	expect_eq "$(json_get "d[\"chunks\"][\"max_rate\"]")" 2147483648 "max_rate"
'

test_expect_success 'two paced snapshots at once each keep their pace and verify' '
	T0=$(now_ms) &&
	snapshot_bg_as p1 -r "$TEST_DIR/r1" --max-rate 1M --json &&
	snapshot_bg_as p2 -r "$TEST_DIR/r2" --max-rate 1M --json &&
	snapshot_wait_as p1 &&
	MS=$(($(now_ms) - T0)) &&
	paced_at_least 1048576 "$TEST_DIR/.snap-p1.out" &&
	snapshot_wait_as p2 &&
	MS=$(($(now_ms) - T0)) &&
	paced_at_least 1048576 "$TEST_DIR/.snap-p2.out" &&
	n=0 &&
	for r in r1 r2; do
		expect_ok verify -r "$TEST_DIR/$r" &&
		expect_eq "$(cut_total "$TEST_DIR/$r" "$(sql "select max(id) from snapshots" "$TEST_DIR/$r/manifest.db")")" 150 "total in $r" ||
		return 1
		n=$((n + 1))
	done &&
	expect_eq "$n" 2 "repositories checked"
'

test_expect_success 'the live cluster still holds 150' '
	total_is 150
'

test_expect_success 'agents with addr stream their chunks over TLS: paced the same' '
	stop_cluster &&
	ports=$(free_ports 2) &&
	make_tls_config A=127.0.0.1:$(echo "$ports" | sed -n 1p) \
	    B=127.0.0.1:$(echo "$ports" | sed -n 2p) &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	clock_start &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/r3" --max-rate 1M --json &&
	clock_stop &&
	paced_at_least 1048576 &&
	json_check "d[\"chunks\"][\"streamed_bytes\"] == d[\"chunks\"][\"bytes\"]" &&
	ID=$(json_get "d[\"id\"]") &&
	expect_ok verify -r "$TEST_DIR/r3" "$ID" &&
	expect_eq "$(cut_total "$TEST_DIR/r3" "$ID")" 150 "total"
'

test_done

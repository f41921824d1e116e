#!/bin/bash
# The progress line of snapshot, verify and restore: drawn on stderr when
# it is a terminal (run under script(1), which gives the command a pty),
# never when it is not, not with --quiet; -v adds a summary line; --json
# output parsed back.
. "$(dirname "$0")/lib.sh"

# One progress frame: "\rVERB: DONE / TOTAL  PCT%  RATE/s  ETA M:SS  agent X".
SIZE='[0-9.]+ (B|KiB|MiB|GiB)'
frame_re () {
	echo "$1: $SIZE / $SIZE +[0-9]+%  ($SIZE|-)/s  ETA ([0-9]+:[0-9]{2}|-:--)  agent [AB]"
}

# on_tty FILE CMD...: run cutsnap CMD with stdout into FILE.out and stderr
# on a pseudo-terminal whose screen output is captured into FILE; the
# status of cutsnap is the status.
on_tty () {
	local f=$1
	shift
	timeout -k 5 60 script -q -e -c "$(printf '%q ' "$CUTSNAP" "$@")>$f.out" \
	    "$f" >/dev/null </dev/null
}

# The frames drawn (carriage returns as line ends).
frames () {
	tr '\r' '\n' <"$1" | sed 's/\x1b\[K//g' | grep -Ex "$(frame_re "$2")"
}

test_expect_success 'setup: A holds 2.2 MiB, B a balance' '
	make_config A B &&
	start_cluster &&
	head -c 2300000 /dev/zero | tr "\0" x >big &&
	expect_ok put -c "$CONF" A big - <big &&
	set_balances A=100 B=50
'

test_expect_success 'snapshot on a terminal draws frames ending at 100%, prints the id' '
	on_tty snap.tty snapshot -c "$CONF" -r "$REPO" &&
	frames snap.tty snapshot >snap.frames &&
	[ -s snap.frames ] &&
	tail -n 1 snap.frames | grep -Eq " 100%  .* agent [AB]$" &&
	grep -Eq "^[0-9]+$" snap.tty.out &&
	SNAP_ID=$(cat snap.tty.out) &&
	total=$(sql "select sum(size) from agents where snapshot_id = $SNAP_ID") &&
	[ "$total" -gt 2300000 ] &&
	tail -n 1 snap.frames | grep -q " / 2.2 MiB "
'

test_expect_success 'verify on a terminal: frames, the line erased before the verdict' '
	on_tty verify.tty verify -r "$REPO" &&
	frames verify.tty verify | tail -n 1 | grep -Eq " 100%  " &&
	grep -q $'\''\033\[K'\'' verify.tty &&
	grep -q "snapshot $SNAP_ID: ok" verify.tty.out
'

test_expect_success 'stderr not a terminal: no progress at all' '
	expect_ok verify -r "$REPO" &&
	[ ! -s "$ERR" ] &&
	expect_ok snapshot -c "$CONF" -r "$REPO" &&
	[ ! -s "$ERR" ]
'

test_expect_success '--quiet on a terminal: no frame' '
	on_tty quiet.tty verify -r "$REPO" --quiet &&
	! frames quiet.tty verify &&
	! grep -q "verify:" quiet.tty
'

test_expect_success '-v: a summary line on stderr, terminal or not' '
	expect_ok verify -r "$REPO" -v &&
	grep -Eqx "verify: $SIZE in [0-9]+\.[0-9]{2} s \($SIZE/s\)" "$ERR" &&
	expect_eq "$(wc -l <"$ERR")" 1 "stderr lines"
'

test_expect_success 'snapshot --json and verify --json parse back with the numbers' '
	expect_ok snapshot -c "$CONF" -r "$REPO" --json &&
	json_check "d[\"status\"] == \"complete\" and d[\"agents\"] == 2 and d[\"msgs\"] == 0" &&
	id=$(json_get "d[\"id\"]") &&
	expect_eq "$(json_get "d[\"bytes\"]")" \
	    "$(sql "select sum(size) from agents where snapshot_id = $id")" "bytes" &&
	expect_ok verify -r "$REPO" "$id" --json &&
	json_check "d[\"snapshot\"] == $id and d[\"ok\"] is True and d[\"problems\"] == [] and d[\"agents\"] == 2"
'

test_expect_success 'restore on a terminal: frames up to 100% (verify, then write)' '
	stop_cluster &&
	on_tty restore.tty restore -r "$REPO" -c "$CONF" &&
	frames restore.tty restore | tail -n 1 | grep -Eq " 100%  " &&
	grep -q "restored snapshot" restore.tty.out
'

test_expect_success 'restore --json: ok, files, no problems' '
	expect_ok restore -r "$REPO" -c "$CONF" --json &&
	json_check "d[\"ok\"] is True and d[\"files\"] == 2 and d[\"problems\"] == [] and d[\"error\"] is None" &&
	[ ! -s "$ERR" ]
'

test_expect_success 'restore --json of a damaged snapshot: ok false, the problems, exit 1' '
	id=$(sql "select max(id) from snapshots") &&
	f=$(chunk_paths "$id" A | head -n 1) && chmod u+w "$f" && flip_byte "$f" 100 &&
	expect_exit 1 restore -r "$REPO" "$id" -c "$CONF" --json &&
	json_check "d[\"ok\"] is False and d[\"snapshot\"] == $id and len(d[\"problems\"]) >= 1 and \"failed verification\" in d[\"error\"]"
'

test_done

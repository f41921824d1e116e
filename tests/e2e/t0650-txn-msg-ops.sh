#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Application messages: a transaction's send puts a message on the
# channel self->peer in the same record as its other writes; the receiver
# keeps it in its inbox, W_REQ_RECV returns the oldest one again and
# again until a transaction's consume takes it out, exactly once. Bad
# sends and consumes are refused by name (one line) and change nothing;
# kill -9 of either end and compaction lose and duplicate nothing.
. "$(dirname "$0")/lib.sh"

CS_WIRE=$(cs --version | sed -n 's/.*wire protocol \([0-9]*\).*/\1/p')
export CS_WIRE
CAP=16777216

# tx NAME CMD ARGS...: the helper against agent NAME, its JSON in $OUT.
tx () {
	local a=$1
	shift
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/$a.sock" "$@" >"$OUT" 2>"$ERR"
}

# refused CODE WHAT: the last reply has CODE, one line, containing WHAT.
refused () {
	json_check "d[\"code\"] == $1 and \"\\n\" not in d[\"message\"]" &&
	json_check "\"$2\" in d[\"message\"] and d[\"message\"].endswith(\"nothing was done\")"
}

# got FROM SEQ PAYLOAD: the last recv returned that message.
got () {
	json_check "d[\"code\"] == 0 and d[\"from\"] == \"$1\" and d[\"seq\"] == $2 and d[\"payload\"] == \"$3\" and len(d[\"id\"]) == 32"
}

# empty NAME: a recv without waiting at NAME times out at once.
empty () { tx "$1" recv 0 && json_check 'd["code"] == 5'; }

# restart NAME: kill -9 agent NAME, then start it again.
restart () {
	local p
	p=$(agent_pid "$1") && [ -n "$p" ] && kill -KILL "$p" &&
	wait_for 10 pid_gone "$p" && start_cluster
}

size_of () { stat -c %s "$1.data"; }

# inbox_count NAME N: cutsnap inbox --json of NAME (in $OUT) counts N.
inbox_count () {
	cs inbox -c "$CONF" "$1" --json >"$OUT" && json_check "d[\"count\"] == $2"
}

test_expect_success 'setup: a one-way channel A>B, C unconnected' '
	[ -n "$CS_WIRE" ] &&
	CHANNELS="A>B" make_config A B C &&
	start_cluster &&
	expect_ok put -c "$CONF" A k before
'

test_expect_success 'send to an unknown agent, to itself or without a channel: refused by name' '
	s=$(size_of A) &&
	tx A txn put k after send Z hi && refused 2 "op 1: send names unknown agent Z" &&
	tx A txn send A hi && refused 2 "op 0: send: no channel A->A" &&
	tx A txn send C hi && refused 2 "op 0: send: no channel A->C" &&
	tx B txn send A hi && refused 2 "op 0: send: no channel B->A" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k" &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'a payload above the cap is refused with the cap' '
	s=$(size_of A) &&
	tx A txn put k after sendn B $((CAP + 1)) &&
	refused 2 "op 1: send payload is $((CAP + 1)) bytes, at most $CAP" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k" &&
	expect_eq "$(size_of A)" "$s" "A.data size"
'

test_expect_success 'consume names a channel into this agent and a message in the inbox' '
	s=$(size_of B) &&
	tx B txn consume Z 1 && refused 2 "op 0: consume names unknown agent Z" &&
	tx B txn consume C 1 && refused 2 "op 0: consume: no channel C->B" &&
	tx A txn consume B 1 && refused 2 "op 0: consume: no channel B->A" &&
	tx B txn put k x consume A 1 &&
	refused 3 "op 1: message seq 1 from A is not in the inbox" &&
	expect_exit 1 get -c "$CONF" B k &&
	expect_eq "$(size_of B)" "$s" "B.data size"
'

test_expect_success 'a truncated send or consume is malformed, and the agent serves on' '
	tx A txn kind 13 && refused 2 "op 0 (send) is truncated" &&
	tx B txn kind 14 && refused 2 "op 0 (consume) is truncated" &&
	expect_eq "$(cs get -c "$CONF" A k)" before "A:k"
'

test_expect_success 'recv on an empty inbox: TIMEOUT at once, or after its timeout' '
	empty B &&
	tx B recv 300 && json_check "d[\"code\"] == 5 and d[\"ms\"] >= 290"
'

test_expect_success 'send with a put: both in one record; recv returns it until consumed' '
	tx A txn put k after send B hello && json_check "d[\"code\"] == 0" &&
	expect_eq "$(cs get -c "$CONF" A k)" after "A:k" &&
	tx B recv 10000 && got A 1 hello && id1=$(json_get "d[\"id\"]") &&
	tx B recv 0 && got A 1 hello &&
	expect_eq "$(json_get "d[\"id\"]")" "$id1" "the same id"
'

test_expect_success 'consume with a put: the message is gone, once; a second consume is NOTFOUND' '
	tx B txn put done 1 consume A 1 && json_check "d[\"code\"] == 0" &&
	expect_eq "$(cs get -c "$CONF" B done)" 1 "B:done" &&
	empty B &&
	s=$(size_of B) &&
	tx B txn put done 2 consume A 1 &&
	refused 3 "op 1: message seq 1 from A is not in the inbox" &&
	expect_eq "$(cs get -c "$CONF" B done)" 1 "B:done" &&
	expect_eq "$(size_of B)" "$s" "B.data size"
'

test_expect_success 'a recv that waits is woken when a message arrives; replies keep their order' '
	python3 "$_lib_dir/txn.py" "$TEST_DIR/run/B.sock" recvget 30000 k \
	    "$TEST_DIR/asked" >recvget.json 2>&1 &
	G=$! && BG_PIDS="$BG_PIDS $G" &&
	wait_for 10 test -e "$TEST_DIR/asked" &&
	tx A txn send B two send B three && json_check "d[\"code\"] == 0" &&
	wait $G &&
	json_check "d[\"recv\"] == 0 and d[\"getv\"] == 3 and d[\"ms\"] < 20000" recvget.json &&
	tx B recv 0 && got A 2 two &&
	tx B txn consume A 2 consume A 2 &&
	refused 2 "op 1: message seq 2 from A is consumed twice" &&
	tx B txn consume A 3 consume A 2 && json_check "d[\"code\"] == 0" &&
	empty B
'

test_expect_success 'kill -9 of the receiver between recv and consume: the message is still there' '
	tx A txn send B four && json_check "d[\"code\"] == 0" &&
	tx B recv 10000 && got A 4 four &&
	restart B &&
	tx B recv 0 && got A 4 four &&
	tx B txn consume A 4 && json_check "d[\"code\"] == 0"
'

test_expect_success 'kill -9 of the receiver after consume: the message is gone' '
	restart B &&
	empty B
'

test_expect_success 'kill -9 of the sender right after the reply: the message arrives once' '
	expect_ok channel -c "$CONF" hold A B &&
	tx A txn send B five && json_check "d[\"code\"] == 0" &&
	restart A &&
	expect_ok channel -c "$CONF" release A B &&
	tx B recv 10000 && got A 5 five &&
	tx B txn consume A 5 && json_check "d[\"code\"] == 0" &&
	empty B &&
	tx A txn send B six && json_check "d[\"code\"] == 0" &&
	tx B recv 10000 && got A 6 six &&
	tx B txn consume A 6 && json_check "d[\"code\"] == 0" &&
	empty B
'

test_expect_success 'unconsumed messages survive a compaction of either end and a restart' '
	tx A txn send B seven send B eight && json_check "d[\"code\"] == 0" &&
	tx B recv 10000 && got A 7 seven &&
	tx B txn consume A 7 && json_check "d[\"code\"] == 0" &&
	wait_for 20 eval "tx B recv 0 && got A 8 eight" &&
	expect_ok compact -c "$CONF" A &&
	expect_ok compact -c "$CONF" B &&
	restart B &&
	tx B recv 0 && got A 8 eight &&
	tx B txn consume A 8 && json_check "d[\"code\"] == 0" &&
	empty B &&
	tx A txn send B nine && json_check "d[\"code\"] == 0" &&
	tx B recv 10000 && got A 9 nine
'

test_expect_success 'cutsnap inbox lists the unconsumed messages, oldest first' '
	expect_ok inbox -c "$CONF" B --json &&
	json_check "d[\"schema\"] == 1 and d[\"agent\"] == \"B\" and d[\"count\"] == 1 and d[\"listed\"] == 1 and d[\"bytes\"] == 4" &&
	json_check "[(m[\"from\"], m[\"seq\"], m[\"bytes\"], len(m[\"id\"])) for m in d[\"messages\"]] == [(\"A\", 9, 4, 32)]" &&
	tx A txn send B ten && json_check "d[\"code\"] == 0" &&
	wait_for 20 inbox_count B 2 &&
	json_check "[m[\"seq\"] for m in d[\"messages\"]] == [9, 10] and d[\"bytes\"] == 7" &&
	tx B txn consume A 9 consume A 10 && json_check "d[\"code\"] == 0" &&
	expect_ok inbox -c "$CONF" B --json &&
	json_check "d[\"count\"] == 0 and d[\"messages\"] == [] and d[\"bytes\"] == 0" &&
	expect_exit 2 inbox -c "$CONF" Z &&
	expect_exit 2 inbox -c "$CONF"
'

test_expect_success 'stop' '
	stop_cluster
'

test_done

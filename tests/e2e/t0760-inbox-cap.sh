#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The inbox cap (inbox_max_bytes) is back-pressure, not loss: B's inbox
# stops admitting application messages once it holds its cap, A's
# messages wait unacknowledged in its channel, and A's transactions that
# send to B get Busy with a one-line reason naming B once more than the
# cap waits; after B consumes, every message arrives exactly once, in
# order. A snapshot taken while the inbox is full completes, verifies and
# restores with every message conserved; so does a kill -9 and restart of
# both agents while messages are held.
. "$(dirname "$0")/lib.sh"

# 200-byte payloads: 221 bytes stored each, so a 1K inbox admits 5 and is
# full then; A is refused once more than 1K waits for B.
SIZE=200
CAP=1024

cap () { timeout 120 python3 "$_lib_dir/inboxcap.py" "$CONF" "$@" >"$OUT" 2>"$ERR"; }

# fill TAG: A sends 5 messages to B, which admits them and is full then
# (waited for); then A sends until Busy, which is after 5 more, held at
# B. SENT=10, the messages TAG-1..TAG-10; B's inbox holds the first 5.
fill () {
	cap fill A B 5 "$1" $SIZE &&
	json_check 'd["busy"] is None and d["sent"] == 5' &&
	wait_for 20 inbox_is B messages 5 &&
	wait_for 20 acked_is $((TOTAL + 5)) &&
	cap fill A B 100 "$1" $SIZE 6 &&
	json_check 'd["busy"] is not None and d["sent"] == 5' &&
	SENT=10
}

# drain N TAG FIRST: B consumes N messages; they are TAG-1..TAG-N with
# seqs FIRST..FIRST+N-1, each once, in order.
drain () {
	cap drain B "$1" &&
	json_check "d[\"consumed\"] == $1 and d[\"seqs\"] == list(range($3, $3 + $1)) and d[\"tags\"] == [\"$2-%d-\" % i for i in range(1, $1 + 1)]"
}

inbox () { status_get "[a[\"inbox\"][\"$2\"] for a in d if a[\"agent\"] == \"$1\"][0]"; }
inbox_is () { [ "$(inbox "$1" "$2")" = "$3" ]; }
acked_is () { [ "$(status_get "[o[\"acked\"] for a in d if a[\"agent\"] == \"A\" for o in a[\"out\"] if o[\"dst\"] == \"B\"][0]")" = "$1" ]; }
key () { cs get -c "$CONF" "$1" "$2"; }

test_expect_success 'setup: A>B, B with inbox_max_bytes = 1K' '
	TOTAL=0 &&
	CHANNELS="A>B" make_config A B &&
	sed -i "/^data = B.data/a inbox_max_bytes = 1K" "$CONF" &&
	expect_ok init -r "$REPO" &&
	start_cluster &&
	expect_ok status -c "$CONF" --json &&
	json_check "[a[\"inbox\"][\"max_bytes\"] for a in d] == [67108864, $CAP]"
'

test_expect_success 'a full inbox: A gets Busy naming B, in one line, and B holds 5' '
	fill one &&
	json_check "\"B\x27s inbox is full\" in d[\"busy\"] and \"\\n\" not in d[\"busy\"] and d[\"busy\"].endswith(\"nothing was done\")" &&
	inbox_is B messages 5 &&
	inbox_is B full true &&
	acked_is 5 &&
	expect_eq "$(key A sent)" "$SENT" "A:sent counts the committed sends"
'

test_expect_success 'the Busy transaction changed nothing; the messages still wait' '
	expect_eq "$(key A sent)" "$SENT" "A:sent" &&
	acked_is 5 &&
	inbox_is B messages 5
'

test_expect_success 'B consumes: every message arrives exactly once, in order' '
	drain "$SENT" one 1 &&
	expect_eq "$(key B got)" "$SENT" "B:got" &&
	inbox_is B messages 0 &&
	wait_for 20 acked_is "$SENT" &&
	TOTAL=$SENT
'

test_expect_success 'a snapshot while the inbox is full completes and records what waits' '
	fill two &&
	FIRST=$((TOTAL + 1)) &&
	TOTAL=$((TOTAL + SENT)) &&
	HELD=5 &&
	take_snapshot --json &&
	expect_ok show -r "$REPO" "$SNAP_ID" --json &&
	json_check "sum(len(c.get(\"messages\", [])) for c in d[\"channels\"]) == $HELD" &&
	expect_ok verify -r "$REPO" "$SNAP_ID" &&
	inbox_is B full true
'

test_expect_success 'after the snapshot B consumes them all, once each' '
	drain "$SENT" two "$FIRST" &&
	expect_eq "$(key B got)" "$TOTAL" "B:got" &&
	expect_eq "$(key A sent)" "$TOTAL" "A:sent" &&
	stop_cluster
'

test_expect_success 'restored, B holds the cut: 5 in its inbox and the held ones replayed, once' '
	expect_ok restore -r "$REPO" "$SNAP_ID" -c "$CONF" &&
	start_cluster &&
	expect_eq "$(key A sent)" "$TOTAL" "A:sent at the cut" &&
	expect_eq "$(key B got)" "$((FIRST - 1))" "B:got at the cut" &&
	inbox_is B messages "$SENT" &&
	drain "$SENT" two "$FIRST" &&
	expect_eq "$(key B got)" "$TOTAL" "B:got after the restore" &&
	inbox_is B messages 0
'

test_expect_success 'kill -9 of both agents while messages are held keeps every one, and A still Busy' '
	wait_for 20 acked_is "$TOTAL" &&
	fill three &&
	FIRST=$((TOTAL + 1)) &&
	TOTAL=$((TOTAL + SENT)) &&
	pa=$(agent_pid A) && pb=$(agent_pid B) &&
	kill -KILL "$pa" "$pb" &&
	wait_for 10 pid_gone "$pa" && wait_for 10 pid_gone "$pb" &&
	start_cluster &&
	inbox_is B messages 5 &&
	expect_eq "$(key A sent)" "$TOTAL" "A:sent after the restart" &&
	cap fill A B 1 again $SIZE &&
	json_check "d[\"sent\"] == 0 and \"B\x27s inbox is full\" in d[\"busy\"]" &&
	drain "$SENT" three "$FIRST" &&
	expect_eq "$(key B got)" "$TOTAL" "B:got after the restart" &&
	wait_for 20 acked_is "$TOTAL" &&
	stop_cluster
'

test_expect_success 'bad inbox_max_bytes and --inbox-max-bytes are usage errors' '
	sed -i "s/^inbox_max_bytes = 1K/inbox_max_bytes = 12Q/" "$CONF" &&
	expect_error 2 status -c "$CONF" &&
	err_matches "inbox_max_bytes .12Q.: expected a size" &&
	sed -i "s/^inbox_max_bytes = 12Q/inbox_max_bytes = 1K/" "$CONF" &&
	expect_error 2 agent -c "$CONF" --name B --inbox-max-bytes 0 &&
	err_matches "inbox-max-bytes .0.: expected a size"
'

test_done

#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Bursts over TCP + TLS cut mid-way: 32 load clients against three agents
# on 127.0.0.1 while the agents' channel connections are reset again and
# again (ss -K). A reset lands in the middle of buffered frames, read by
# the agent as many frames per TLS read; after each reconnect the sender
# resends what the receiver had not applied. Nothing is lost, nothing is
# applied twice or out of order: the total is conserved, every channel's
# sent = acked = applied by the receiver, and no agent logged a bad seq.
. "$(dirname "$0")/lib.sh"
test_require SS
. "$_lib_dir/lib-tls.sh"

LOAD=$TEST_DIR/load.json
CUTS=$TEST_DIR/cuts

# ge N MIN WHAT: the number N is at least MIN.
ge () {
	[ "$1" -ge "$2" ] 2>/dev/null && return 0
	say "$3: expected at least $2, found '$1'"
	return 1
}

# cut_channels: reset every TCP connection an agent of the cluster opened
# to another agent's port (its outgoing channels; clients are left
# alone). Appends the number reset to CUTS.
cut_channels () {
	local pids sp dp n=0
	pids=$(for a in $AGENTS; do agent_pid "$a"; done | paste -sd'|')
	# By both ports: a client's connection may use the same local port
	# towards another agent.
	while read -r sp dp; do
		n=$((n + $(ss -K -tnH "( sport = :$sp and dport = :$dp )" | wc -l)))
	done < <(ss -tnpH state established \
	    "( dport = :$PA or dport = :$PB or dport = :$PC )" |
	    grep -E "pid=($pids)," | awk '{ n = split($3, x, ":");
	        m = split($4, y, ":"); print x[n], y[m] }')
	echo "$n" >>"$CUTS"
}

# resent_reconnects: how many times a channel came back up with messages
# still queued for the receiver (the resends after a cut mid-burst).
resent_reconnects () {
	cat "$TEST_DIR"/run/*.log |
	    grep -Ec "channel [A-C]>[A-C] up \(peer applied [0-9]+, [1-9][0-9]* queued\)" || true
}

# channels_exact: every channel's sent = acked = applied by its receiver,
# nothing queued; prints how many channels it compared.
channels_exact () {
	cs status -c "$CONF" --json >"$TEST_DIR/st.json" || return 1
	python3 - "$TEST_DIR/st.json" <<'PY'
import json, sys
ags = {a["agent"]: a for a in json.load(open(sys.argv[1]))}
n = 0
for name, a in ags.items():
    for o in a["out"]:
        i = [x for x in ags[o["dst"]]["in"] if x["src"] == name][0]
        if not (o["sent"] == o["acked"] == i["applied"]) or o["queued"] \
                or o["unacked"] or i["queued"]:
            print("channel %s>%s: sent %d acked %d applied %d queued %d/%d"
                  % (name, o["dst"], o["sent"], o["acked"], i["applied"],
                     o["queued"], i["queued"]), file=sys.stderr)
            sys.exit(1)
        if o["sent"] == 0:
            print("channel %s>%s carried nothing" % (name, o["dst"]),
                  file=sys.stderr)
            sys.exit(1)
        n += 1
print(n)
PY
}

test_expect_success 'setup: A, B, C on 127.0.0.1 with TLS; every channel up (12 ends)' '
	tls_loopback_abc
'

test_expect_success '32 clients for 8 s, channels reset every 0.3 s: conserved, no failure' '
	: >"$CUTS" &&
	{ cs load --json -c "$CONF" -s 8 --clients 32 >"$LOAD" 2>"$TEST_DIR/load.err" & } &&
	lp=$! &&
	sleep 1 &&
	while kill -0 "$lp" 2>/dev/null; do cut_channels; sleep 0.3; done &&
	wait "$lp"; rc=$?
	cat "$LOAD" "$TEST_DIR/load.err" >&2
	expect_eq "$rc" 0 "load exit" &&
	expect_eq "$(json_get "d[\"conserved\"]" "$LOAD")" true "conserved" &&
	expect_eq "$(json_get "d[\"failures\"]" "$LOAD")" 0 "failures" &&
	ge "$(json_get "d[\"transfers\"]" "$LOAD")" 1000 "transfers" &&
	ge "$(awk "{ s += \$1 } END { print s + 0 }" "$CUTS")" 6 "connections reset"
'

test_expect_success 'the channels were cut mid-burst: reconnects resent queued messages' '
	ge "$(resent_reconnects)" 1 "reconnects with messages queued" &&
	ge "$(cat "$TEST_DIR"/run/*.log | grep -Ec "channel [A-C]>[A-C] down")" 6 "channels down"
'

test_expect_success 'exactly once: every channel sent = acked = applied, 6 channels' '
	wait_for 20 channels_up 12 &&
	wait_for 20 channels_exact &&
	expect_eq "$(channels_exact)" 6 "channels compared"
'

test_expect_success 'no agent logged a bad seq, a malformed frame or a divergence' '
	expect_eq "$(cat "$TEST_DIR"/run/*.log | grep -Eci "seq [0-9]+ is more|has seq|claims seq|malformed|diverged|dead letter")" 0 "bad lines"
'

test_expect_success 'a snapshot after the cuts verifies' '
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

test_done

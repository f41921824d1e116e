#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# cutsnap load: concurrent random transfers, the summary line, snapshots
# taken under load verify, the conservation check catches a foreign write,
# and the agents' group commit counters.
. "$(dirname "$0")/lib.sh"

# field NAME FILE: the value of NAME=VALUE in the text summary line (the
# case that checks that line's format; the others read --json).
field () {
	tr ' ' '\n' <"$2" | awk -F= -v k="$1" '$1 == k { print $2; f = 1 }
	    END { exit !f }'
}

# is_num VALUE: a decimal number (digits, optional fraction).
is_num () {
	case $1 in
	'' | *[!0-9.]* | *.*.*) return 1 ;;
	esac
}

# A's count of client write requests, from status --json.
a_writes () { status_get "[a[\"writes\"] for a in d if a[\"agent\"] == \"A\"][0]"; }

a_writes_above () { [ "$(a_writes)" -gt "$1" ]; }

# A took no write request for a second: no client of load runs any more.
a_writes_settled () {
	local w
	w=$(a_writes) && sleep 1 && [ "$(a_writes)" = "$w" ]
}

test_expect_success 'setup: three agents, one without a balance' '
	make_config A B C &&
	start_cluster &&
	set_balances A=500 B=700
'

test_expect_success 'load without snapshots: exit 0, a full summary, total conserved' '
	expect_ok load -c "$CONF" --seconds 2 --clients 3 --initial 300 &&
	[ "$(wc -l <"$OUT")" -eq 1 ] &&
	for f in transfers transfers/s p50_ms p99_ms snapshots insufficient \
	    failures fsyncs_per_transfer outside_snapshot_p50_ms \
	    outside_snapshot_p99_ms outside_snapshot_max_ms; do
		v=$(field "$f" "$OUT") && is_num "$v" ||
		    { say "field $f: \"$v\""; cat "$OUT" >&2; return 1; }
	done &&
	[ "$(field transfers "$OUT")" -gt 0 ] &&
	expect_eq "$(field snapshots "$OUT")" 0 "snapshots" &&
	expect_eq "$(field failures "$OUT")" 0 "failures" &&
	expect_eq "$(field total_before "$OUT")" 1500 "total before" &&
	expect_eq "$(field total_after "$OUT")" 1500 "total after" &&
	expect_eq "$(field conserved "$OUT")" yes "conserved" &&
	expect_eq "$(field interrupted "$OUT")" no "interrupted" &&
	[ ! -s "$ERR" ] &&
	expect_eq "$(total)" 1500 "live total"
'

test_expect_success 'C got the deposit once; existing balances were not overwritten' '
	expect_ok load -c "$CONF" -s 1 --clients 2 --initial 999 --json &&
	expect_eq "$(json_get "d[\"total_before\"]")" 1500 "total before" &&
	expect_eq "$(total)" 1500 "live total"
'

test_expect_success 'clients spread over worker threads: 5 over 3, 1 alone' '
	expect_ok load -c "$CONF" -s 1 --clients 5 --threads 3 --json &&
	json_check "d[\"clients\"] == 5 and d[\"failures\"] == 0 and d[\"conserved\"] is True" &&
	expect_ok load -c "$CONF" -s 1 --clients 1 --threads 4 --json &&
	json_check "d[\"transfers\"] > 0 and d[\"conserved\"] is True"
'

test_expect_success 'the agents count fsyncs and write requests in status' '
	expect_ok status -c "$CONF" --json &&
	syncs=$(json_get "[a[\"syncs\"] for a in d if a[\"agent\"] == \"A\"][0]") &&
	writes=$(json_get "[a[\"writes\"] for a in d if a[\"agent\"] == \"A\"][0]") &&
	[ "$writes" -gt 0 ] && [ "$syncs" -gt 0 ] &&
	[ "$syncs" -le $((2 * writes + 10)) ]
'

test_expect_success 'load with a snapshot every 300 ms: snapshots counted, each verifies' '
	expect_ok load -c "$CONF" -s 3 --clients 4 --snapshot-every 300 -r "$REPO" --json &&
	n=$(json_get "d[\"snapshots\"]") &&
	[ "$n" -ge 1 ] &&
	json_check "d[\"snapshot_failures\"] == 0 and d[\"conserved\"] is True" &&
	ids=$(sql "select id from snapshots where status = '"'"'complete'"'"'") &&
	expect_eq "$(echo "$ids" | wc -l)" "$n" "complete snapshots" &&
	for id in $ids; do
		expect_ok verify -r "$REPO" "$id" || return 1
	done
'

test_expect_success 'a snapshot taken under load restores to the same total' '
	stop_cluster &&
	expect_ok restore -r "$REPO" -c "$CONF" &&
	expect_eq "$(dump_total bal)" 1500 "restored total" &&
	start_cluster
'

test_expect_success 'load --json: one JSON object with the same fields' '
	expect_ok load -c "$CONF" -s 1 --clients 2 --json &&
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"conserved\"] is True, d
assert d[\"transfers\"] > 0 and d[\"failures\"] == 0, d
assert d[\"total_before\"] == d[\"total_after\"] == 1500, d
assert d[\"interrupted\"] is False, d
for k in (\"transfers_per_s\", \"p50_ms\", \"p99_ms\", \"snapshots\"):
    assert isinstance(d[k], (int, float)), k
" "$OUT"
'

# with_sigint CMD... &: CMD with SIGINT at its default, as in a
# terminal's foreground (a script's background jobs start with it
# ignored). Only as a background job: it replaces the job's subshell, so
# that $! is CMD's pid.
with_sigint () {
	exec python3 -c "import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])" "$@"
}

# The binary itself, not cs: timeout would pass the signal on, and a
# run of 120 s would outlast cs's limit.
test_expect_success 'SIGINT (Ctrl-C) ends a run early: exit 0, the summary, interrupted, total conserved' '
	with_sigint "$CUTSNAP" load -c "$CONF" -s 120 --clients 4 \
	    --snapshot-every 300 -r "$REPO" --json >load.out 2>load.err &
	L=$! && BG_PIDS="$BG_PIDS $L" &&
	w0=$(a_writes) &&
	wait_for 20 a_writes_above $((w0 + 20)) &&
	kill -INT "$L" &&
	wait_for 60 pid_gone "$L" &&
	{ wait "$L"; rc=$?; true; } &&
	expect_eq "$rc" 0 "load exit status" &&
	json_check "(d[\"interrupted\"] is True and d[\"seconds\"] < 60 and
	    d[\"transfers\"] > 0 and d[\"failures\"] == 0 and
	    d[\"snapshot_failures\"] == 0 and d[\"conserved\"] is True and
	    d[\"total_after\"] == 1500)" load.out &&
	[ ! -s load.err ] &&
	expect_eq "$(total)" 1500 "live total"
'

# SIGTERM ends the run as SIGINT does; after the run, while load waits
# for a held channel to drain, the handler is gone: a second signal has
# its default effect.
test_expect_success 'SIGTERM ends the run; a second one, while load drains, ends load at once' '
	"$CUTSNAP" load -c "$CONF" -s 120 --clients 4 --json >load.out 2>load.err &
	L=$! && BG_PIDS="$BG_PIDS $L" &&
	w0=$(a_writes) &&
	wait_for 20 a_writes_above $((w0 + 20)) &&
	expect_ok channel -c "$CONF" hold A B &&
	s0=$(out_field A B sent) &&
	wait_for 20 eval "[ \"\$(out_field A B sent)\" -gt $s0 ]" &&
	kill -TERM "$L" &&
	wait_for 20 a_writes_settled &&
	! pid_gone "$L" &&
	kill -TERM "$L" &&
	wait_for 10 pid_gone "$L" &&
	{ wait "$L"; rc=$?; true; } &&
	expect_eq "$rc" 143 "load exit status (killed by SIGTERM)" &&
	[ ! -s load.out ] &&
	expect_ok channel -c "$CONF" release A B &&
	wait_for 30 channel_drained A B &&
	expect_eq "$(total)" 1500 "live total"
'

test_expect_success 'a foreign deposit during the load breaks conservation: exit 1' '
	cs load -c "$CONF" -s 4 --clients 2 --json >load.out 2>load.err &
	L=$! && BG_PIDS="$BG_PIDS $L" &&
	w0=$(a_writes) &&
	wait_for 10 a_writes_above $((w0 + 20)) &&
	cs add -c "$CONF" A bal 5 >/dev/null &&
	{ wait "$L"; rc=$?; true; } &&
	expect_eq "$rc" 1 "load exit status" &&
	json_check "d[\"conserved\"] is False and d[\"total_after\"] == 1505" load.out &&
	grep -q "^cutsnap: load: total not conserved: 1500 before, 1505 after$" load.err
'

test_expect_success 'bad usage: exit 2 with one line' '
	expect_error 2 load -c "$CONF" --snapshot-every 100 &&
	err_matches "needs -r REPO" &&
	expect_error 2 load -c "$CONF" -r "$REPO" &&
	expect_error 2 load -c "$CONF" --clients 0 &&
	expect_error 2 load -c "$CONF" --threads 0 &&
	expect_error 2 load -c "$CONF" --seconds x &&
	expect_error 2 load
'

test_done

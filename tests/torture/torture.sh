#!/bin/bash
# torture.sh - the fault loop: random transfers, snapshots and restores
# with random kill -9 of agents, coordinators and restores; then a bank
# check of every complete snapshot and of the live cluster.
#
# usage: torture.sh [-n ROUNDS] [-s SEED] [-a AGENTS] [-k]
#   -n ROUNDS  rounds to run (default 100)
#   -s SEED    RANDOM seed (default: from the clock; printed)
#   -a AGENTS  number of agents, 2..8 (default 3)
#   -k         keep the work directory
# Environment: CUTSNAP (the binary; default bin/cutsnap of this checkout).
#
# Each agent starts with bal=1000. The invariants, checked throughout and
# at the end (a failed one is a violation; the exit status is 1 if any):
#   - every snapshot ls lists is complete or aborted once its coordinator
#     is gone, never running;
#   - every complete snapshot verifies, and restored (into a second
#     config's data paths) it holds exactly the initial total, also after
#     a restore that was killed half-way and run again;
#   - once killed agents are restarted and the channels have drained, the
#     live total is the initial total.
# The report at the end is in the spirit of Jepsen's bank checker.
set -u

ROUNDS=100
SEED=$(( $(date +%s%N) % 32768 ))
NAG=3
KEEP=0
while getopts "n:s:a:k" o; do
	case $o in
	n) ROUNDS=$OPTARG ;;
	s) SEED=$OPTARG ;;
	a) NAG=$OPTARG ;;
	k) KEEP=1 ;;
	*) echo "usage: torture.sh [-n ROUNDS] [-s SEED] [-a AGENTS] [-k]" >&2
	   exit 2 ;;
	esac
done
case "$ROUNDS$SEED$NAG" in *[!0-9]*)
	echo "torture: -n, -s and -a take numbers" >&2; exit 2 ;;
esac
[ "$NAG" -ge 2 ] && [ "$NAG" -le 8 ] || {
	echo "torture: -a takes 2..8" >&2; exit 2; }
RANDOM=$SEED

here=$(cd "$(dirname "$0")" && pwd)
CUTSNAP=${CUTSNAP:-$here/../../bin/cutsnap}
[ -x "$CUTSNAP" ] || { echo "torture: no binary at $CUTSNAP" >&2; exit 2; }

# A short base keeps socket paths under 108 bytes.
W=$(mktemp -d /tmp/cs-torture.XXXXXX) || exit 2
CONF=$W/cluster.ini
RCONF=$W/restore/cluster.ini
REPO=$W/repo
LOG=$W/torture.log
NAMES=""
for i in $(seq 1 "$NAG"); do
	NAMES="$NAMES $(printf "\\x$(printf %x $((64 + i)))")"
done
INIT_EACH=1000
INIT_TOTAL=$((INIT_EACH * NAG))
BG=""

# --- bookkeeping -------------------------------------------------------

rounds_done=0
n_xfer_ok=0 n_xfer_fail=0
n_kill_agent=0 n_kill_coord=0 n_kill_restore=0 n_fault_restore=0
n_snap_ok=0 n_snap_fail=0
n_restore=0 n_verify=0
n_viol=0 first_viol="" worst_viol="" worst_delta=0

log () { printf '%s\n' "$*" >>"$LOG"; }

# violation DELTA TEXT: record a broken invariant (DELTA: how far a total
# is off, 0 when there is no total involved).
violation () {
	local d=${1#-}
	n_viol=$((n_viol + 1))
	log "VIOLATION (round $rounds_done): $2"
	[ -z "$first_viol" ] && first_viol="round $rounds_done: $2"
	if [ -z "$worst_viol" ] || [ "$d" -gt "$worst_delta" ]; then
		worst_delta=$d
		worst_viol="round $rounds_done: $2"
	fi
}

cs () { timeout -k 5 60 "$CUTSNAP" "$@"; }

cleanup () {
	local p
	for p in $BG; do kill -KILL "$p" 2>/dev/null; done
	timeout -k 2 10 "$CUTSNAP" stop -c "$CONF" >/dev/null 2>&1
	for p in $(agent_pids); do kill -KILL "$p" 2>/dev/null; done
	if [ "$KEEP" = 1 ]; then
		echo "torture: kept $W"
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Pids of our agents (their command line names our config).
agent_pids () { pgrep -f -- "agent -c $CONF" 2>/dev/null; }

agent_pid () {
	cs status -c "$CONF" 2>/dev/null |
	    awk -v n="$1" '$1 == n && $2 == "up" {
		for (i = 3; i <= NF; i++) if ($i ~ /^pid=/) {
			sub(/^pid=/, "", $i); print $i } }'
}

pick () { local a=($NAMES); echo "${a[$((RANDOM % ${#a[@]}))]}"; }

# wait_pid PID SECONDS: wait for a background child, bounded; kill -9 it
# when it overstays. Sets WRC to its status.
wait_pid () {
	local end=$((SECONDS + $2))
	while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt "$end" ]; do
		sleep 0.05
	done
	if kill -0 "$1" 2>/dev/null; then
		log "pid $1 overstayed ${2}s; killed"
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
	WRC=$?
}

# --- setup -------------------------------------------------------------

mkconf () {
	local n
	echo "[cluster]"
	echo "run_dir = run"
	for n in $NAMES; do
		printf '\n[agent %s]\ndata = %s.data\n' "$n" "$n"
	done
}
mkdir -p "$W/restore"
mkconf >"$CONF"
mkconf >"$RCONF"

cs start -c "$CONF" >>"$LOG" 2>&1 || { echo "torture: start failed" >&2; exit 1; }
for n in $NAMES; do
	cs put -c "$CONF" "$n" bal "$INIT_EACH" >/dev/null ||
	    { echo "torture: put failed" >&2; exit 1; }
done

# --- the actions -------------------------------------------------------

# Random transfers in the background (some fail: insufficient funds or a
# dead source; a failed transfer changes nothing).
transfers_bg () {
	local k s d
	for k in $(seq 1 $((1 + RANDOM % 6))); do
		s=$(pick); d=$(pick)
		[ "$s" = "$d" ] && continue
		( cs transfer -c "$CONF" "$s:bal" "$d:bal" $((1 + RANDOM % 120)) \
		    >/dev/null 2>>"$W/xfer.err" && echo ok || echo fail
		) >>"$W/xfer.res" &
		BG="$BG $!"
	done
}

kill_agent () {
	local n p
	n=$(pick)
	p=$(agent_pid "$n")
	[ -n "$p" ] || return 0
	kill -KILL "$p" 2>/dev/null && {
		n_kill_agent=$((n_kill_agent + 1))
		log "killed agent $n (pid $p)"
	}
}

restart_agents () {
	cs start -c "$CONF" >>"$LOG" 2>&1 || log "start failed (retried later)"
}

# A snapshot from a random initiator while transfers run, often with a
# channel held (so it records messages in flight), sometimes released in
# reverse (the non-FIFO drill); meanwhile maybe kill -9 its coordinator or
# an agent.
snapshot_round () {
	local init p hs="" hd="" rc
	if [ $((RANDOM % 2)) -eq 0 ]; then
		hs=$(pick); hd=$(pick)
		if [ "$hs" != "$hd" ] &&
		    cs channel -c "$CONF" hold "$hs" "$hd" >/dev/null 2>&1; then
			log "hold $hs>$hd"
		else
			hs=""
		fi
	fi
	transfers_bg
	init=$(pick)
	"$CUTSNAP" snapshot -c "$CONF" -r "$REPO" --initiator "$init" \
	    --timeout 4 >>"$LOG" 2>&1 &
	p=$!
	sleep "$(printf '0.%03d' $((RANDOM % 120)))"
	if [ $((RANDOM % 4)) -eq 0 ] && kill -KILL "$p" 2>/dev/null; then
		n_kill_coord=$((n_kill_coord + 1))
		log "killed coordinator (snapshot by $init)"
	fi
	[ $((RANDOM % 7)) -eq 0 ] && kill_agent
	if [ -n "$hs" ]; then
		if [ $((RANDOM % 3)) -eq 0 ]; then
			cs channel -c "$CONF" release --reverse "$hs" "$hd" \
			    >>"$LOG" 2>&1
		else
			cs channel -c "$CONF" release "$hs" "$hd" >>"$LOG" 2>&1
		fi
	fi
	wait_pid "$p" 30
	rc=$WRC
	if [ "$rc" -eq 0 ]; then
		n_snap_ok=$((n_snap_ok + 1))
	else
		n_snap_fail=$((n_snap_fail + 1))
	fi
}

# total_of CONF: the sum of bal over the data files of CONF (offline).
total_of () {
	local n v s=0 dir
	dir=$(dirname "$1")
	for n in $NAMES; do
		v=$("$CUTSNAP" dump "$dir/$n.data" 2>/dev/null |
		    awk -F'\t' '$1 == "bal" { print $2; f = 1 } END { exit !f }')
		[ -n "$v" ] || v=0
		s=$((s + v))
	done
	echo "$s"
}

complete_ids () {
	cs ls -r "$REPO" 2>/dev/null | awk '$3 == "complete" { print $1 }'
}

# restore_check ID: restore (maybe killed half-way first, then again) and
# check the restored total.
restore_check () {
	local id=$1 p t mode=$((RANDOM % 3))
	rm -f "$W"/restore/*.data
	if [ "$mode" -eq 1 ]; then
		CUTSNAP_FAULT=restore-after-file:$((1 + RANDOM % NAG)) \
		    cs restore -r "$REPO" "$id" -c "$RCONF" >>"$LOG" 2>&1
		[ $? -eq 99 ] && n_fault_restore=$((n_fault_restore + 1))
	elif [ "$mode" -eq 2 ]; then
		"$CUTSNAP" restore -r "$REPO" "$id" -c "$RCONF" >>"$LOG" 2>&1 &
		p=$!
		sleep "$(printf '0.%03d' $((RANDOM % 15)))"
		kill -KILL "$p" 2>/dev/null && n_kill_restore=$((n_kill_restore + 1))
		wait "$p" 2>/dev/null
	fi
	if ! cs restore -r "$REPO" "$id" -c "$RCONF" >>"$LOG" 2>&1; then
		violation 0 "restore of complete snapshot $id failed"
		return
	fi
	n_restore=$((n_restore + 1))
	t=$(total_of "$RCONF")
	[ "$t" = "$INIT_TOTAL" ] ||
	    violation $((t - INIT_TOTAL)) "snapshot $id restores to $t, not $INIT_TOTAL"
	# Once more over the restored files: nothing may be applied twice.
	cs restore -r "$REPO" "$id" -c "$RCONF" >>"$LOG" 2>&1 || {
		violation 0 "second restore of snapshot $id failed"; return; }
	t=$(total_of "$RCONF")
	[ "$t" = "$INIT_TOTAL" ] ||
	    violation $((t - INIT_TOTAL)) "snapshot $id restored twice holds $t, not $INIT_TOTAL"
}

verify_check () {
	local id=$1
	n_verify=$((n_verify + 1))
	cs verify -r "$REPO" "$id" >>"$LOG" 2>&1 ||
	    violation 0 "complete snapshot $id does not verify"
}

# Nothing listed as running once no coordinator is alive.
ls_check () {
	local r
	r=$(cs ls -r "$REPO" 2>/dev/null | awk '$3 == "running" { print $1 }')
	[ -z "$r" ] || violation 0 "snapshot(s) $r listed running with no coordinator"
}

# --- the loop ----------------------------------------------------------

start_s=$SECONDS
for rounds_done in $(seq 1 "$ROUNDS"); do
	BG=""
	transfers_bg
	[ $((RANDOM % 10)) -eq 0 ] && kill_agent
	snapshot_round
	[ $((RANDOM % 10)) -eq 0 ] && kill_agent
	for p in $BG; do wait_pid "$p" 60; done
	BG=""
	# Restart what was killed most rounds; sometimes let a snapshot run
	# with an agent down first (it must abort).
	[ $((RANDOM % 5)) -ne 0 ] && restart_agents
	if [ -f "$REPO/manifest.db" ]; then
		ls_check
		if [ $((RANDOM % 4)) -eq 0 ]; then
			ids=($(complete_ids))
			if [ ${#ids[@]} -gt 0 ]; then
				id=${ids[$((RANDOM % ${#ids[@]}))]}
				verify_check "$id"
				restore_check "$id"
			fi
		fi
	fi
	if [ $((rounds_done % 10)) -eq 0 ]; then
		printf 'torture: round %d/%d, %d violation(s)\n' \
		    "$rounds_done" "$ROUNDS" "$n_viol" >&2
	fi
done

# --- the final check -----------------------------------------------------

restart_agents
# Channels drain once every agent is up: poll the live total, bounded.
live=""
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ]; do
	cs start -c "$CONF" >/dev/null 2>&1
	live=0
	for n in $NAMES; do
		v=$(cs get -c "$CONF" "$n" bal 2>/dev/null) || { live=""; break; }
		live=$((live + v))
	done
	[ "$live" = "$INIT_TOTAL" ] && break
	sleep 0.2
done
if [ "$live" != "$INIT_TOTAL" ]; then
	violation $(( ${live:-0} - INIT_TOTAL )) "live total ${live:-unreadable} after draining, not $INIT_TOTAL"
else
	# Still so a moment later: no late duplicate delivery.
	sleep 1
	live=0
	for n in $NAMES; do
		v=$(cs get -c "$CONF" "$n" bal 2>/dev/null) || v=0
		live=$((live + v))
	done
	[ "$live" = "$INIT_TOTAL" ] ||
	    violation $((live - INIT_TOTAL)) "live total moved to $live after draining"
fi
if [ -f "$REPO/manifest.db" ]; then
	ls_check
	for id in $(complete_ids); do
		verify_check "$id"
		restore_check "$id"
	done
	n_complete=$(cs ls -r "$REPO" | awk '$3 == "complete"' | wc -l)
	n_inflight=$(cs ls -r "$REPO" | awk '$3 == "complete" { s += $NF }
	    END { print s + 0 }')
	n_aborted=$(cs ls -r "$REPO" | awk '$3 == "aborted"' | wc -l)
else
	n_complete=0 n_aborted=0 n_inflight=0
fi
n_xfer_ok=$(grep -c '^ok' "$W/xfer.res" 2>/dev/null)
n_xfer_fail=$(grep -c '^fail' "$W/xfer.res" 2>/dev/null)

# --- the report ------------------------------------------------------------

cat <<EOF
cutsnap torture: seed $SEED, $NAG agents, initial total $INIT_TOTAL
  rounds            $ROUNDS in $((SECONDS - start_s)) s
  transfers         ${n_xfer_ok:-0} ok, ${n_xfer_fail:-0} refused or failed
  kills             agent $n_kill_agent, coordinator $n_kill_coord, restore $n_kill_restore (+ $n_fault_restore restores stopped by CUTSNAP_FAULT)
  snapshots         $n_complete complete ($n_inflight messages in flight recorded), $n_aborted aborted
                    (coordinator exit 0: $n_snap_ok, non-zero or killed: $n_snap_fail)
  checks            $n_verify verify, $n_restore restores checked (each also run twice)
  live total        ${live:-unreadable} (expected $INIT_TOTAL)
  violations        $n_viol
EOF
if [ "$n_viol" -gt 0 ]; then
	echo "  first             $first_viol"
	echo "  worst             $worst_viol"
	echo "  log               $LOG"
	KEEP=1
	echo "torture: FAIL"
	exit 1
fi
echo "torture: PASS"
exit 0

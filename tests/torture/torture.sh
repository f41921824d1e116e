#!/bin/bash
# torture.sh - the fault loop: random transfers, snapshots and restores
# with random kill -9 of agents, coordinators and restores; then a bank
# check of every complete snapshot and of the live cluster.
#
# usage: torture.sh [-n ROUNDS] [-s SEED] [-a AGENTS] [-k] [-e] [-t]
#   -n ROUNDS  rounds to run (default 100)
#   -s SEED    RANDOM seed (default: from the clock; printed)
#   -a AGENTS  number of agents, 2..8 (default 3)
#   -k         keep the work directory
#   -e         an encrypted repository (cutsnap init --encrypt; every
#              command reads the password from CUTSNAP_PASSWORD_FILE, and
#              the keys are cheap: CUTSNAP_SCRYPT_N=1024)
#   -t         agents on TCP with mutual TLS (addr = 127.0.0.1:PORT and
#              tls_dir, certificates from cutsnap cert) instead of Unix
#              sockets: the same rounds, faults and checks
# Environment: CUTSNAP (the binary; default bin/cutsnap of this checkout),
# TORTURE_PCT="NAME=PCT ..." (overrides the FAULTS table's percentages,
# e.g. "mix_histories=100" to exercise one mode on purpose),
# TMPDIR (where the work directory goes; kept when the run fails).
#
# Each agent starts with bal=1000. A round holds one to three channels,
# sends transfers over them (queued at their senders: in flight), takes a
# snapshot from a random initiator while more transfers flow, releases
# the held channels (in order or reversed) once every agent has recorded
# its state, so that the snapshot records the queued messages in flight.
# The fault modes (table FAULTS below) strike at random meanwhile. Every
# agent also holds the key frozen = "text": transfers to it become dead
# letters at their receiver (dead_letter, sometimes killing the receiver
# while it records one), which resolve_dead refunds (sometimes killing the
# agent while it resolves) or tries to retry (which must fail).
# The agents compact their data files on their own from 64 KiB
# (compact_min_size), and the loop asks for compactions, also right
# before it kills the agent, while snapshots run.
#
# The invariants, checked throughout and at the end (a failed one is a
# violation):
#   - once its coordinator is gone, a snapshot ls lists is complete,
#     aborted, or running flagged stale, and the next snapshot marks the
#     stale ones aborted; a coordinator that exited 0 named a snapshot ls
#     lists as complete;
#   - every complete snapshot verifies, its cut (show --sum) holds exactly
#     the initial total, and restored (into a second config's data paths)
#     it holds the initial total, also after a restore that was killed
#     half-way and run again, and after a second restore over it;
#   - once killed agents are restarted and the channels have drained, the
#     live total is the initial total.
#   - overlapping snapshots (two to four started together, into one
#     repository or into two, sometimes with a coordinator or an agent
#     killed during them): each that exits 0 is listed complete in its
#     repository, verifies and sums at once, and restores to the initial
#     total at the end; a
#     repository gains no other complete snapshot; ids within a
#     repository and the 128-bit identities across both are distinct;
#   - a subset of the agents restored alone (restore --agent) into the
#     live cluster never spends a recorded balance again: a transfer
#     from a fenced agent fails; once its fence lifted by itself, or the
#     other agents were restored from the same snapshot, the live total
#     is the initial total;
#   - files from different histories (a restore of the live cluster
#     stopped after its first file) never lose a transfer: one across the
#     mix is refused (diverged) or arrives; once the restore is finished
#     the live total is the initial total.
# A total is the bal values plus what is in flight plus the open dead
# letters (a refunded one is in flight or back in a bal).
# A run that checked nothing has not passed either: no complete snapshot,
# no verify, no restore, or no message recorded in flight by the complete
# snapshots fails the run, and so does a run whose overlap mode struck
# but checked no overlapping snapshot. Every figure is read from --json output, never
# from a table meant for people.
#
# The report at the end is in the spirit of Jepsen's bank checker; its
# last line but one is machine-readable:
#   torture-summary: seed=S agents=N rounds=R seconds=T complete=C ...
# and the last line is "torture: PASS" or "torture: FAIL". Exit 0 on PASS.
set -u
exec 3>&2

ROUNDS=100
SEED=$(( $(date +%s%N) % 32768 ))
NAG=3
KEEP=0
ENCRYPT=0
TCP=0
while getopts "n:s:a:ket" o; do
	case $o in
	n) ROUNDS=$OPTARG ;;
	s) SEED=$OPTARG ;;
	a) NAG=$OPTARG ;;
	k) KEEP=1 ;;
	e) ENCRYPT=1 ;;
	t) TCP=1 ;;
	*) echo "usage: torture.sh [-n ROUNDS] [-s SEED] [-a AGENTS] [-k] [-e] [-t]" >&2
	   exit 2 ;;
	esac
done
case "$ROUNDS$SEED$NAG" in *[!0-9]*)
	echo "torture: -n, -s and -a take numbers" >&2; exit 2 ;;
esac
[ "$NAG" -ge 2 ] && [ "$NAG" -le 8 ] || {
	echo "torture: -a takes 2..8" >&2; exit 2; }
[ "$ROUNDS" -ge 1 ] || { echo "torture: -n takes 1 or more" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../python.sh"
command -v python3 >/dev/null || {
	echo "torture: python3 is needed to read --json output" >&2; exit 2; }
RANDOM=$SEED

CUTSNAP=${CUTSNAP:-$here/../../bin/cutsnap}
[ -x "$CUTSNAP" ] || { echo "torture: no binary at $CUTSNAP" >&2; exit 2; }

# A short base keeps socket paths under 108 bytes.
_base=${TMPDIR:-/tmp}
[ ${#_base} -gt 40 ] && _base=/tmp
W=$(mktemp -d "$_base/cs-torture.XXXXXX") || exit 2
CONF=$W/cluster.ini
RCONF=$W/restore/cluster.ini
REPO=$W/repo
REPO2=$W/repo2
LOG=$W/torture.log
NAMES=""
for i in $(seq 1 "$NAG"); do
	NAMES="$NAMES $(printf "\\x$(printf %x $((64 + i)))")"
done
if [ "$ENCRYPT" = 1 ]; then
	export CUTSNAP_PASSWORD_FILE=$W/password CUTSNAP_SCRYPT_N=1024
	printf 'torture %s\n' "$SEED" >"$CUTSNAP_PASSWORD_FILE"
	{ "$CUTSNAP" init -r "$REPO" --encrypt &&
	    "$CUTSNAP" init -r "$REPO2" --encrypt; } >"$LOG" 2>&1 || {
		echo "torture: init --encrypt failed: $(tail -n 1 "$LOG")" >&2
		rm -rf "$W"
		exit 2
	}
fi
INIT_EACH=1000
INIT_TOTAL=$((INIT_EACH * NAG))
BG=""

# --- the fault modes -----------------------------------------------------
#
# One row per mode: NAME PHASE PERCENT. fault_NAME is called in PHASE with
# probability PERCENT/100; it returns 0 when it struck (counted under NAME
# in the report) and 1 when it found nothing to strike. A new mode is a
# function and a row. The phases:
#   round     in the middle of a round: transfers run, no snapshot
#   snapshot  while a snapshot runs: SNAP_PID is its coordinator (it may
#             have exited already), HELD its held channels ("S>D ...")
#   restore   before the checked restore of snapshot CHECK_ID into RCONF,
#             whose data files were removed: leave them as a failed
#             restore would (the checked restore must then succeed)
FAULTS="
dead_letter       round     35
resolve_dead      round     35
kill_agent        round     10
kill_coordinator  snapshot  25
kill_agent        snapshot  14
stop_restore      restore   33
kill_restore      restore   33
compact_agent     round     20
kill_compacting   snapshot  15
mix_histories     round     5
overlap           round     12
partial_restore   round     5
"

# cutsnap compact of a random live agent, in the background: it may wait
# for a snapshot in progress to copy its recorded state.
fault_compact_agent () {
	local n
	n=$(pick)
	[ -n "$(agent_pid "$n")" ] || return 1
	cs compact -c "$CONF" "$n" >>"$LOG" 2>&1 &
	BG="$BG $!"
	log "compaction of agent $n requested"
}

# kill -9 a random live agent 0-29 ms after asking it for a compaction,
# while a snapshot runs: the kill lands in the rewrite or while its switch
# waits for the snapshot.
fault_kill_compacting () {
	local n p
	n=$(pick)
	p=$(agent_pid "$n")
	[ -n "$p" ] || return 1
	"$CUTSNAP" compact -c "$CONF" "$n" >>"$LOG" 2>&1 &
	BG="$BG $!"
	sleep "$(printf '0.%03d' $((RANDOM % 30)))"
	kill -KILL "$p" 2>/dev/null || return 1
	log "killed agent $n (pid $p) during its compaction"
}

# kill -9 a random live agent.
fault_kill_agent () {
	local n p
	n=$(pick)
	p=$(agent_pid "$n")
	[ -n "$p" ] || return 1
	kill -KILL "$p" 2>/dev/null || return 1
	log "killed agent $n (pid $p)"
}

# kill -9 the snapshot's coordinator (the cutsnap process itself).
fault_kill_coordinator () {
	kill -KILL "$SNAP_PID" 2>/dev/null || return 1
	log "killed coordinator of the snapshot by $SNAP_INIT"
}

# A transfer S:bal -> D:frozen (every agent's key frozen holds text): D
# consumes it as a dead letter, counted in the bank. Half the time D is
# killed with -9 0-14 ms later, while it may be recording the dead letter.
fault_dead_letter () {
	local s d p
	s=$(pick); d=$(pick_other "$s")
	cs transfer -c "$CONF" "$s:bal" "$d:frozen" $((1 + RANDOM % 30)) \
	    >/dev/null 2>>"$LOG" || return 1
	n_dead_sent=$((n_dead_sent + 1))
	log "dead letter: $s:bal -> $d:frozen"
	[ $((RANDOM % 2)) -eq 0 ] && return 0
	sleep "$(printf '0.%03d' $((RANDOM % 15)))"
	p=$(agent_pid "$d")
	[ -n "$p" ] && kill -KILL "$p" 2>/dev/null &&
	    log "killed agent $d (pid $p) while it records a dead letter"
	return 0
}

# Resolve an open dead letter of a random agent D: a retry into frozen,
# which must fail and leave it open; or a refund to its sender, with D
# killed -9 0-14 ms into it half the time (the refund is then done once
# or not at all: the bank says which was wrong).
fault_resolve_dead () {
	local d one src seq p rc
	d=$(pick)
	one=$(cs deadletter -c "$CONF" list "$d" --json 2>>"$LOG" |
	    json '[("%s %d" % (x["src"], x["seq"])) for a in d["agents"] for x in a["dead_letters"]][:1]' 2>/dev/null)
	[ -n "$one" ] || return 1
	read -r src seq <<<"$one"
	if [ $((RANDOM % 4)) -eq 0 ]; then
		cs deadletter -c "$CONF" retry "$d" "$src" "$seq" >>"$LOG" 2>&1
		rc=$?
		[ $rc -eq 1 ] || violation 0 "retry of dead letter $src->$d seq $seq into text exited $rc, not 1"
		return 0
	fi
	"$CUTSNAP" deadletter -c "$CONF" refund "$d" "$src" "$seq" >>"$LOG" 2>&1 &
	p=$!
	n_dead_resolved=$((n_dead_resolved + 1))
	if [ $((RANDOM % 2)) -eq 0 ]; then
		sleep "$(printf '0.%03d' $((RANDOM % 15)))"
		kill -KILL "$(agent_pid "$d")" 2>/dev/null &&
		    log "killed agent $d while it refunds $src->$d seq $seq"
	fi
	wait_pid "$p" 30
	return 0
}

# dead_open_sum: the open dead letters' amounts over the live agents
# (deadletter list --json); fails when an agent does not answer.
dead_open_sum () {
	cs deadletter -c "$CONF" list --json 2>>"$LOG" |
	    json 'sum(x["amount"] for a in d["agents"] for x in a["dead_letters"])'
}

# live_total: bal over the live agents plus their open dead letters;
# fails when an agent does not answer.
live_total () {
	local t v n
	t=$(dead_open_sum 2>/dev/null) || return 1
	for n in $NAMES; do
		v=$(cs get -c "$CONF" "$n" bal 2>/dev/null) || return 1
		t=$((t + v))
	done
	echo "$t"
}

# live_total_is_initial WHAT: bounded like the final check, start what is
# not up yet and poll until the live total is the initial one; else a
# violation, WHAT's %s being the total found.
live_total_is_initial () {
	local k t=""
	for k in $(seq 1 300); do
		cs start -c "$CONF" >/dev/null 2>&1
		t=$(live_total) || t=""
		[ "$t" = "$INIT_TOTAL" ] && return 0
		sleep 0.2
	done
	# shellcheck disable=SC2059 # WHAT is the format
	violation $(( ${t:-0} - INIT_TOTAL )) "$(printf "$1" "${t:-unreadable}"), not $INIT_TOTAL"
}

# A restore stopped by CUTSNAP_FAULT after its N-th file (exit 99).
fault_stop_restore () {
	CUTSNAP_FAULT=restore-after-file:$((1 + RANDOM % NAG)) \
	    cs restore -r "$CHECK_REPO" "$CHECK_ID" -c "$RCONF" >>"$LOG" 2>&1
	[ $? -eq 99 ]
}

# A restore killed with -9 after 0-14 ms.
fault_kill_restore () {
	local p rc=1
	"$CUTSNAP" restore -r "$CHECK_REPO" "$CHECK_ID" -c "$RCONF" >>"$LOG" 2>&1 &
	p=$!
	sleep "$(printf '0.%03d' $((RANDOM % 15)))"
	kill -KILL "$p" 2>/dev/null && rc=0
	wait "$p" 2>/dev/null
	return $rc
}

# Files from different histories: a restore of the live cluster stopped
# by CUTSNAP_FAULT after its first file, then the agents started on the
# mix (one file from the snapshot, the others live). A channel between
# the two histories must refuse (diverged) or deliver: a transfer over it
# that exits 0 must arrive (the old failure: dropped as "already
# applied"). It credits the key mix, which nothing else touches, so its
# arrival is seen. Sometimes an agent is killed during the mix. Then the
# restore is finished by running it again, as an operator would, and the
# cluster goes on from that cut: its live total is the initial one.
fault_mix_histories () {
	local ids id p rc names x y s d k before now t
	ids=($(ids_with complete))
	if [ ${#ids[@]} -eq 0 ]; then
		# No snapshot to mix from yet (every one so far was aborted by
		# a fault): take one with every agent up, so that a short run
		# still mixes.
		restart_agents
		cs snapshot -q -c "$CONF" -r "$REPO" --timeout 10 >>"$LOG" 2>&1 &&
		    log "mix: a snapshot taken to mix from"
		ids=($(ids_with complete))
		[ ${#ids[@]} -gt 0 ] || return 1
	fi
	id=${ids[$((RANDOM % ${#ids[@]}))]}
	for p in $BG; do wait_pid "$p" 60; done
	BG=""
	cs stop -c "$CONF" >>"$LOG" 2>&1 || { log "mix: stop failed"; return 1; }
	CUTSNAP_FAULT=restore-after-file:1 \
	    cs restore -r "$REPO" "$id" -c "$CONF" >>"$LOG" 2>&1
	rc=$?
	if [ $rc -ne 99 ]; then
		violation 0 "restore of snapshot $id stopped after its first file exited $rc, not 99"
		restart_agents
		return 0
	fi
	restart_agents
	n_mix=$((n_mix + 1))
	names=($NAMES)
	x=${names[0]}
	log "mix: $x from snapshot $id, the others live"
	# Every channel end connected or found diverged (bounded).
	for k in $(seq 1 50); do
		t=$(cs status -c "$CONF" --json 2>>"$LOG" | json '
sum(1 for a in d if not a.get("up")) +
sum(1 for a in d if a.get("up") for c in a["out"] + a["in"]
    if not c.get("up") and not c.get("diverged"))' 2>/dev/null)
		[ "$t" = 0 ] && break
		sleep 0.2
	done
	t=$(cs status -c "$CONF" --json 2>>"$LOG" | json '
sum(1 for a in d if a.get("up") for c in a["out"] + a["in"]
    if c.get("diverged"))' 2>/dev/null)
	[ "${t:-0}" -gt 0 ] && n_mix_diverged=$((n_mix_diverged + 1))
	log "mix: ${t:-?} diverged channel ends"
	[ $((RANDOM % 3)) -eq 0 ] && fault_kill_agent && restart_agents
	for k in 1 2 3; do
		y=$(pick_other "$x")
		if [ $((RANDOM % 2)) -eq 0 ]; then s=$x d=$y; else s=$y d=$x; fi
		before=$(cs get -c "$CONF" "$d" mix 2>/dev/null) || before=0
		if cs transfer -c "$CONF" "$s:bal" "$d:mix" 1 >/dev/null \
		    2>"$W/mix.err"; then
			n_mix_sent=$((n_mix_sent + 1))
			for t in $(seq 1 100); do
				now=$(cs get -c "$CONF" "$d" mix 2>/dev/null) || now=0
				[ "$now" -gt "$before" ] && break
				sleep 0.2
			done
			if [ "$now" -gt "$before" ]; then
				n_mix_delivered=$((n_mix_delivered + 1))
			else
				violation -1 "mix: transfer $s->$d exited 0 over files from different histories but never arrived"
			fi
		elif grep -q diverged "$W/mix.err"; then
			n_mix_refused=$((n_mix_refused + 1))
		else
			log "mix: transfer $s->$d failed: $(cat "$W/mix.err")"
		fi
	done
	for k in 1 2 3; do
		cs stop -c "$CONF" >>"$LOG" 2>&1 && break
		log "mix: stop failed (try $k)"
	done
	if ! cs restore -r "$REPO" "$id" -c "$CONF" >>"$LOG" 2>&1; then
		violation 0 "mix: finishing the restore of snapshot $id failed"
		restart_agents
		return 0
	fi
	live_total_is_initial "mix: live total %s after finishing the restore of snapshot $id"
	return 0
}

# fence_states: "NAME:STATE" for every agent that answers, STATE none,
# waiting (fenced, no diverged channel) or stuck (fenced, a channel
# diverged), from status --json.
fence_states () {
	cs status -c "$CONF" --json 2>>"$LOG" | json '
["%s:%s" % (a["agent"], "none" if not a.get("fenced") else
    "stuck" if any(c.get("diverged") for c in a["out"] + a["in"])
    else "waiting") for a in d if a.get("up")]' 2>/dev/null
}

# A host loses its disk: a random proper subset of the agents is killed
# -9 and restored alone (restore --agent) from a complete snapshot into
# the live cluster, the others running on. A restored agent must not
# spend its recorded balance again: while fenced, a transfer from it to
# any peer fails. Its fence lifts by itself only when no channel of it
# moved since the cut; then the live total is the initial one at once.
# Else the operator's documented step, restoring the other agents from
# the same snapshot, resolves it, and the live total is the initial one.
# Half the time the snapshot is taken right before the kill, so that
# both outcomes occur.
fault_partial_restore () {
	local ids id names sub=() rest=() n k p s d st t args lifted=1
	for p in $BG; do wait_pid "$p" 60; done
	BG=""
	restart_agents
	if [ $((RANDOM % 2)) -eq 0 ]; then
		cs snapshot -q -c "$CONF" -r "$REPO" --timeout 10 >>"$LOG" 2>&1 &&
		    log "partial: a snapshot taken to restore from"
	fi
	ids=($(ids_with complete))
	[ ${#ids[@]} -gt 0 ] || return 1
	id=${ids[${#ids[@]} - 1]}
	[ $((RANDOM % 2)) -eq 0 ] && id=${ids[$((RANDOM % ${#ids[@]}))]}
	# A random k of the agents (a shuffle driven by RANDOM, so the
	# seed replays it).
	names=($NAMES)
	for ((t = ${#names[@]} - 1; t > 0; t--)); do
		p=$((RANDOM % (t + 1)))
		n=${names[t]} names[t]=${names[p]} names[p]=$n
	done
	k=$((1 + RANDOM % (NAG - 1)))
	sub=("${names[@]:0:k}") rest=("${names[@]:k}")
	args=""
	for n in "${sub[@]}"; do
		p=$(agent_pid "$n")
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
		args="$args --agent $n"
	done
	for n in "${sub[@]}"; do
		for t in $(seq 1 100); do
			[ -z "$(agent_pid "$n")" ] && break
			sleep 0.1
		done
	done
	if ! cs restore -r "$REPO" "$id" -c "$CONF" $args >>"$LOG" 2>&1; then
		violation 0 "partial: restore of ${sub[*]} from snapshot $id failed"
		restart_agents
		return 0
	fi
	n_part=$((n_part + 1))
	log "partial: ${sub[*]} restored alone from snapshot $id; ${rest[*]} live"
	restart_agents
	# Every restored agent lifts its fence or finds a diverged channel
	# (bounded: start waited for it already).
	for t in $(seq 1 100); do
		st=$(fence_states)
		echo "$st" | grep -q ':waiting$' || break
		sleep 0.2
	done
	log "partial: fences: $(echo $st)"
	for n in "${sub[@]}"; do
		case " $(echo $st) " in
		*" $n:none "*) continue ;;
		esac
		lifted=0
		for d in "${rest[@]}"; do
			if cs transfer -c "$CONF" "$n:bal" "$d:bal" 1 >/dev/null \
			    2>"$W/part.err"; then
				violation 1 "partial: fenced agent $n (restored alone from snapshot $id) transferred to $d"
			elif grep -q fenced "$W/part.err"; then
				n_part_refused=$((n_part_refused + 1))
			else
				log "partial: transfer $n->$d failed: $(cat "$W/part.err")"
			fi
		done
	done
	if [ $lifted = 1 ]; then
		n_part_lifted=$((n_part_lifted + 1))
	else
		# The documented resolution: the others from the same snapshot.
		args=""
		for n in "${rest[@]}"; do args="$args --agent $n"; done
		for k in 1 2 3; do
			cs stop -c "$CONF" >>"$LOG" 2>&1 && break
		done
		if ! cs restore -r "$REPO" "$id" -c "$CONF" $args >>"$LOG" 2>&1; then
			violation 0 "partial: restoring ${rest[*]} from snapshot $id failed"
			restart_agents
			return 0
		fi
		n_part_resolved=$((n_part_resolved + 1))
	fi
	live_total_is_initial "partial: live total %s after restoring ${sub[*]} alone from snapshot $id ($([ $lifted = 1 ] && echo "fences lifted" || echo "the others restored too"))"
	st=$(fence_states)
	echo "$st" | grep -qv ':none$' &&
	    violation 0 "partial: agents still fenced at the end: $(echo $st)"
	return 0
}

# Overlapping snapshots: two to four `cutsnap snapshot` started together
# from random initiators, each into REPO or into the second repository
# REPO2 (so sometimes into one, sometimes into two), over a held channel
# with queued transfers while transfers flow; a third of the time one
# coordinator is killed -9, a fifth of the time an agent (restarted
# after; only once one overlapping snapshot was checked). Every one that
# exits 0 is listed complete in its repository and verified at once
# (integrity and cut sum); the final check restores it to the initial
# total (as every complete snapshot of both repositories); the others
# add no complete snapshot (a repository gains exactly as many complete
# ones as coordinators exited 0); the new ids in a repository and the
# 128-bit identities across both are all distinct.
fault_overlap () {
	local n i p s d held="" ok=0 c1 c2 r id pids=() repos=() inits=() rcs=()
	local victim killed_agent="" two
	n=$((2 + RANDOM % 3))
	for p in $BG; do wait_pid "$p" 60; done
	BG=""
	restart_agents
	c1=$(complete_count "$REPO") || return 1
	c2=$(complete_count "$REPO2") || return 1
	s=$(pick); d=$(pick_other "$s")
	if cs channel -c "$CONF" hold "$s" "$d" >>"$LOG" 2>&1; then
		held="$s $d"
		for i in 1 2; do
			transfer "$s" "$d" $((1 + RANDOM % 50)) &&
			    n_held_msgs=$((n_held_msgs + 1))
		done
	fi
	rm -f "$W/stop.stream"
	stream_bg &
	BG="$BG $!"
	# Into one repository (every other time) or into both: then the
	# second goes to REPO2, the rest to either.
	two=$((n_overlap % 2))
	for i in $(seq 0 $((n - 1))); do
		r=$REPO
		[ "$two" = 1 ] && { [ "$i" = 1 ] ||
		    { [ "$i" -gt 1 ] && [ $((RANDOM % 2)) -eq 0 ]; }; } &&
		    r=$REPO2
		inits[$i]=$(pick)
		repos[$i]=$r
		"$CUTSNAP" snapshot -q -c "$CONF" -r "$r" \
		    --initiator "${inits[$i]}" --timeout 4 \
		    >"$W/overlap.$i.out" 2>>"$LOG" &
		pids[$i]=$!
	done
	n_overlap=$((n_overlap + 1))
	n_overlap_started=$((n_overlap_started + n))
	[ "$two" = 1 ] && n_overlap_two=$((n_overlap_two + 1))
	log "overlap: $n snapshots by ${inits[*]} into $(for r in "${repos[@]}"; do basename "$r"; done | tr '\n' ' ')"
	sleep "$(printf '0.%03d' $((RANDOM % 150)))"
	if [ $((RANDOM % 3)) -eq 0 ]; then
		victim=$((RANDOM % n))
		kill -KILL "${pids[$victim]}" 2>/dev/null &&
		    log "overlap: killed coordinator $victim (by ${inits[$victim]})"
	fi
	# An agent killed aborts them all: only once one overlapping snapshot
	# was checked, so that a short run still checks one.
	if [ $((RANDOM % 5)) -eq 0 ] && [ "$n_overlap_checked" -gt 0 ]; then
		killed_agent=$(pick)
		p=$(agent_pid "$killed_agent")
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null &&
		    log "overlap: killed agent $killed_agent (pid $p)"
	fi
	sleep "$(printf '0.%03d' $((RANDOM % 100)))"
	[ -n "$held" ] && cs channel -c "$CONF" release $held >>"$LOG" 2>&1
	for i in $(seq 0 $((n - 1))); do
		wait_pid "${pids[$i]}" 30
		rcs[$i]=$WRC
		if [ "$WRC" -eq 0 ]; then
			ok=$((ok + 1))
			if [ "${repos[$i]}" = "$REPO" ]; then
				c1=$((c1 + 1))
			else
				c2=$((c2 + 1))
			fi
		fi
	done
	touch "$W/stop.stream"
	[ -n "$killed_agent" ] && restart_agents
	log "overlap: $ok of $n exited 0"
	# Each repository gained exactly the ones that exited 0: the killed
	# and failed ones are not listed complete.
	[ "$(complete_count "$REPO")" = "$c1" ] ||
	    violation 0 "overlap: $(basename "$REPO") lists $(complete_count "$REPO") complete snapshots, expected $c1"
	[ "$(complete_count "$REPO2")" = "$c2" ] ||
	    violation 0 "overlap: $(basename "$REPO2") lists $(complete_count "$REPO2") complete snapshots, expected $c2"
	distinct_ids
	for i in $(seq 0 $((n - 1))); do
		[ "${rcs[$i]}" -eq 0 ] || continue
		id=$(tr -dc '0-9' <"$W/overlap.$i.out")
		if ! status_is "$id" complete "${repos[$i]}"; then
			violation 0 "overlap: snapshot exited 0 with id '$id', not listed complete in $(basename "${repos[$i]}")"
			continue
		fi
		n_overlap_ok=$((n_overlap_ok + 1))
		echo "${repos[$i]} $id" >>"$W/overlap.ids"
		verify_check "$id" "${repos[$i]}" &&
		    n_overlap_checked=$((n_overlap_checked + 1))
	done
	return 0
}

# complete_count REPO: how many snapshots REPO lists complete (0 while it
# does not exist).
complete_count () {
	local r=$1
	[ -f "$r/manifest.db" ] || { echo 0; return 0; }
	cs ls -r "$r" --json 2>>"$LOG" |
	    json 'sum(1 for s in d if s["status"] == "complete")'
}

# distinct_ids: the ids within each repository and the 128-bit
# identities across both are distinct.
distinct_ids () {
	local r dup
	for r in "$REPO" "$REPO2"; do
		[ -f "$r/manifest.db" ] || continue
		cs ls -r "$r" --json 2>>"$LOG" || echo '[]'
	done | python3 -c '
import json, sys
ids, uids = {}, {}
text, at, dec = sys.stdin.read(), 0, json.JSONDecoder()
while text[at:].strip():
    at += len(text[at:]) - len(text[at:].lstrip())
    lst, at = dec.raw_decode(text, at)
    for s in lst:
        key = (s["repository"], s["id"])
        ids[key] = ids.get(key, 0) + 1
        uids[s["uid"]] = uids.get(s["uid"], 0) + 1
dup = [k for k, v in ids.items() if v > 1] + [k for k, v in uids.items() if v > 1]
print(" ".join(str(x) for x in dup))' >"$W/dup.out" 2>>"$LOG" ||
	    { violation 0 "overlap: the snapshot lists cannot be read"; return; }
	dup=$(cat "$W/dup.out")
	[ -z "$dup" ] || violation 0 "overlap: snapshot ids listed twice: $dup"
	n_overlap_idchecks=$((n_overlap_idchecks + 1))
}

# fault_pct NAME PCT: PCT, or what TORTURE_PCT ("NAME=PCT ...", for a
# run that exercises one mode on purpose) says for NAME.
fault_pct () {
	local kv
	for kv in ${TORTURE_PCT:-}; do
		[ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }
	done
	echo "$2"
}

# run_faults PHASE: give every mode of PHASE its chance.
declare -A STRUCK
run_faults () {
	local name phase pct
	while read -r name phase pct; do
		[ "$phase" = "$1" ] || continue
		pct=$(fault_pct "$name" "$pct")
		[ $((RANDOM % 100)) -lt "$pct" ] || continue
		if "fault_$name"; then
			STRUCK[$name]=$(( ${STRUCK[$name]:-0} + 1 ))
		fi
	done <<<"$FAULTS"
}

# The mode names, each once, in table order.
fault_names () {
	awk 'NF == 3 && !seen[$1]++ { print $1 }' <<<"$FAULTS"
}

# --- bookkeeping -------------------------------------------------------

rounds_done=0
n_snap_ok=0 n_snap_fail=0 n_held_msgs=0 n_holds=0
n_restore=0 n_verify=0 n_cutsum=0 n_dead_sent=0 n_dead_resolved=0
STALE=""
n_viol=0 first_viol="" worst_viol="" worst_delta=0
n_mix=0 n_mix_diverged=0 n_mix_sent=0 n_mix_delivered=0 n_mix_refused=0
n_overlap=0 n_overlap_started=0 n_overlap_two=0 n_overlap_ok=0
n_overlap_checked=0 n_overlap_idchecks=0
n_part=0 n_part_lifted=0 n_part_resolved=0 n_part_refused=0

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

# json EXPR: read JSON on stdin into d, print the Python expression EXPR:
# a list one item a line, anything else as it is. Fails on bad JSON.
json () {
	python3 -c 'import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
for x in (v if isinstance(v, list) else [v]):
    print(x)' "$1"
}

cleanup () {
	local p
	for p in $BG; do kill -KILL "$p" 2>/dev/null; done
	timeout -k 2 10 "$CUTSNAP" stop -c "$CONF" >/dev/null 2>&1
	for p in $(agent_pids); do kill -KILL "$p" 2>/dev/null; done
	if [ "$KEEP" = 1 ]; then
		echo "torture: kept $W" >&3
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Pids of our agents (their command line names our config).
agent_pids () { pgrep -f -- "agent -c $CONF" 2>/dev/null; }

# agent_pid NAME: the pid of a live agent, from status --json.
agent_pid () {
	cs status -c "$CONF" --json 2>/dev/null |
	    json "[a['pid'] for a in d if a['agent'] == '$1' and a['up']]" 2>/dev/null
}

pick () { local a=($NAMES); echo "${a[$((RANDOM % ${#a[@]}))]}"; }

# pick_other NAME: a random agent other than NAME.
pick_other () {
	local a=(${NAMES/ $1/})
	echo "${a[$((RANDOM % ${#a[@]}))]}"
}

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

# mkconf [PORT...]: a config for the agents; with ports (the TCP variant,
# -t), each agent listens on 127.0.0.1:PORT with mutual TLS (tls_dir).
mkconf () {
	local n
	echo "[cluster]"
	echo "run_dir = run"
	echo "compact_min_size = 64K"
	[ $# -gt 0 ] && echo "tls_dir = tls"
	for n in $NAMES; do
		printf '\n[agent %s]\ndata = %s.data\n' "$n" "$n"
		if [ $# -gt 0 ]; then
			printf 'addr = 127.0.0.1:%s\n' "$1"
			shift
		fi
	done
}

. "$here/../ports.sh"

mkdir -p "$W/restore"
if [ "$TCP" = 1 ]; then
	# The live cluster and the restore target get ports of their own;
	# both use one CA, made by cutsnap cert.
	mapfile -t PORTS < <(free_ports $((2 * NAG)))
	mkconf "${PORTS[@]:0:NAG}" >"$CONF"
	mkconf "${PORTS[@]:NAG}" >"$RCONF"
	cs cert -c "$CONF" >>"$LOG" 2>&1 && cp -a "$W/tls" "$W/restore/tls" ||
	    { echo "torture: cutsnap cert failed: $(tail -n 1 "$LOG")" >&2; exit 2; }
else
	mkconf >"$CONF"
	mkconf >"$RCONF"
fi
: >"$W/xfer.res"

cs start -c "$CONF" >>"$LOG" 2>&1 || { echo "torture: start failed" >&2; exit 1; }
for n in $NAMES; do
	cs put -c "$CONF" "$n" bal "$INIT_EACH" >/dev/null &&
	    cs put -c "$CONF" "$n" frozen text >/dev/null ||
	    { echo "torture: put failed" >&2; exit 1; }
done

# From here on the shell's own notices (a background job "Killed") go to
# the log; the progress lines go to the original stderr (fd 3, opened
# at the top).
exec 2>>"$LOG"

# --- the actions -------------------------------------------------------

# transfer S D N: one transfer, its outcome (ok/fail) in xfer.res.
transfer () {
	if cs transfer -c "$CONF" "$1:bal" "$2:bal" "$3" >/dev/null \
	    2>>"$W/xfer.err"; then
		echo ok >>"$W/xfer.res"
		return 0
	fi
	echo fail >>"$W/xfer.res"
	return 1
}

# Random transfers in the background (some fail: insufficient funds or a
# dead source; a failed transfer changes nothing).
transfers_bg () {
	local k s d
	for k in $(seq 1 $((1 + RANDOM % 6))); do
		s=$(pick); d=$(pick)
		[ "$s" = "$d" ] && continue
		transfer "$s" "$d" $((1 + RANDOM % 120)) &
		BG="$BG $!"
	done
}

# A stream of transfers in the background until the file STOP exists
# (bounded: at most 200).
stream_bg () {
	local s d k=0
	while [ ! -e "$W/stop.stream" ] && [ $k -lt 200 ]; do
		s=$(pick); d=$(pick)
		[ "$s" = "$d" ] || transfer "$s" "$d" $((1 + RANDOM % 40))
		k=$((k + 1))
	done
}

restart_agents () {
	cs start -c "$CONF" >>"$LOG" 2>&1 || log "start failed (retried later)"
}

# hold_channels: hold one to three random channels and send one to three
# transfers over each (they queue at the sender: in flight). Sets HELD.
hold_channels () {
	local k s d i
	HELD=""
	for k in $(seq 1 $((1 + RANDOM % 3))); do
		s=$(pick); d=$(pick_other "$s")
		case " $HELD " in *" $s>$d "*) continue ;; esac
		cs channel -c "$CONF" hold "$s" "$d" >>"$LOG" 2>&1 || continue
		HELD="$HELD $s>$d"
		n_holds=$((n_holds + 1))
		for i in $(seq 1 $((1 + RANDOM % 3))); do
			transfer "$s" "$d" $((1 + RANDOM % 50)) &&
			    n_held_msgs=$((n_held_msgs + 1))
		done
	done
	log "held:${HELD:- none}"
}

release_channels () {
	local c
	for c in $HELD; do
		if [ $((RANDOM % 3)) -eq 0 ]; then
			cs channel -c "$CONF" release --reverse "${c%>*}" "${c#*>}" \
			    >>"$LOG" 2>&1
		else
			cs channel -c "$CONF" release "${c%>*}" "${c#*>}" >>"$LOG" 2>&1
		fi
	done
	HELD=""
}

# Every agent has recorded its state for a snapshot (status --json: each
# one up, its snapshot phase past "joined").
all_recorded () {
	cs status -c "$CONF" --json 2>/dev/null | json '
all(a["up"] and any(s["phase"] in ("recording", "recorded", "reported")
    for s in a["snapshots"]) for a in d)' 2>/dev/null | grep -qx True
}

# wait_recorded: until every agent has recorded, or the coordinator is
# gone, bounded (3 s).
wait_recorded () {
	local end=$((SECONDS + 3))
	while kill -0 "$SNAP_PID" 2>/dev/null && [ $SECONDS -lt "$end" ]; do
		all_recorded && return 0
		sleep 0.05
	done
	return 1
}

# A snapshot from a random initiator over held channels with queued
# transfers, while transfers flow; the held channels are released once
# every agent has recorded (the queued messages are then in flight in the
# cut). The snapshot faults strike early (before the recording) or late
# (during the release and the copy).
snapshot_round () {
	local early=$((RANDOM % 2)) id
	hold_channels
	rm -f "$W/stop.stream"
	stream_bg &
	BG="$BG $!"
	SNAP_INIT=$(pick)
	"$CUTSNAP" snapshot -q -c "$CONF" -r "$REPO" --initiator "$SNAP_INIT" \
	    --timeout 4 >"$W/snap.out" 2>>"$LOG" &
	SNAP_PID=$!
	if [ $early = 1 ]; then
		sleep "$(printf '0.%03d' $((RANDOM % 120)))"
		run_faults snapshot
	fi
	wait_recorded ||
	    { kill -0 "$SNAP_PID" 2>/dev/null &&
	      log "not every agent recorded within 3 s (snapshot by $SNAP_INIT)"; }
	release_channels
	if [ $early = 0 ]; then
		sleep "$(printf '0.%03d' $((RANDOM % 60)))"
		run_faults snapshot
	fi
	wait_pid "$SNAP_PID" 30
	touch "$W/stop.stream"
	if [ "$WRC" -eq 0 ]; then
		n_snap_ok=$((n_snap_ok + 1))
		id=$(tr -dc '0-9' <"$W/snap.out")
		status_is "$id" complete ||
		    violation 0 "snapshot exited 0 with id '$id', not listed complete"
		stale_check
	else
		n_snap_fail=$((n_snap_fail + 1))
	fi
}

# --- the checks ----------------------------------------------------------

# read_ls [REPO]: the snapshots of REPO (default: the repository) from
# ls --json into $W/ls.json; fails when ls fails (no repository yet
# counts as empty).
read_ls () {
	local r=${1:-$REPO}
	if [ ! -f "$r/manifest.db" ]; then
		echo "[]" >"$W/ls.json"
		return 0
	fi
	cs ls -r "$r" --json >"$W/ls.json" 2>>"$LOG" && return 0
	violation 0 "ls --json of $(basename "$r") failed"
	return 1
}

# ids_with STATUS: the ids of the listed snapshots in STATUS.
ids_with () {
	read_ls && json "[s['id'] for s in d if s['status'] == '$1']" <"$W/ls.json"
}

# status_is ID STATUS [REPO]: ls lists snapshot ID with STATUS.
status_is () {
	[ -n "$1" ] && read_ls "${3:-}" &&
	    json "[s['status'] for s in d if s['id'] == $1]" <"$W/ls.json" |
	    grep -qx "$2"
}

# total_of CONF: the sum of bal over the data files of CONF (offline,
# dump --json); fails when a file cannot be read.
total_of () {
	local n v s=0 dir
	dir=$(dirname "$1")
	for n in $NAMES; do
		v=$(cs dump "$dir/$n.data" --json 2>>"$LOG" |
		    json "int(d['keys'].get('bal', 0)) + sum(x['amount'] for x in d['dead_letters'] if x['state'] == 'open')") || return 1
		s=$((s + v))
	done
	echo "$s"
}

# restore_check ID [REPO]: the restore faults, then the restore that must
# succeed, its total, and a second restore over it (nothing applied
# twice). 0 when every check held.
restore_check () {
	local t v0=$n_viol
	CHECK_ID=$1
	CHECK_REPO=${2:-$REPO}
	rm -f "$W"/restore/*.data
	run_faults restore
	if ! cs restore -r "$CHECK_REPO" "$1" -c "$RCONF" >>"$LOG" 2>&1; then
		violation 0 "restore of complete snapshot $1 failed"
		return 1
	fi
	n_restore=$((n_restore + 1))
	if ! t=$(total_of "$RCONF"); then
		violation 0 "snapshot $1 restored, but a data file cannot be read"
	elif [ "$t" != "$INIT_TOTAL" ]; then
		violation $((t - INIT_TOTAL)) "snapshot $1 restores to $t, not $INIT_TOTAL"
	fi
	cs restore -r "$CHECK_REPO" "$1" -c "$RCONF" >>"$LOG" 2>&1 || {
		violation 0 "second restore of snapshot $1 failed"; return 1; }
	if ! t=$(total_of "$RCONF"); then
		violation 0 "snapshot $1 restored twice, but a data file cannot be read"
	elif [ "$t" != "$INIT_TOTAL" ]; then
		violation $((t - INIT_TOTAL)) "snapshot $1 restored twice holds $t, not $INIT_TOTAL"
	fi
	[ "$n_viol" -eq "$v0" ]
}

# verify_check ID [REPO]: verify --json says ok (and exits 0); the cut's
# sum of bal (show --sum --json: the files plus the messages in flight) is
# the initial total. 0 when both held.
verify_check () {
	local v t r=${2:-$REPO}
	n_verify=$((n_verify + 1))
	v=$(cs verify -q -r "$r" "$1" --json 2>>"$LOG")
	if [ $? -ne 0 ] || [ "$(json 'd["ok"]' <<<"$v" 2>/dev/null)" != True ]; then
		violation 0 "complete snapshot $1 of $(basename "$r") does not verify: $v"
		return 1
	fi
	# bal's conserved total (with bal's own dead letters), plus the
	# credits to frozen in flight and frozen's open dead letters.
	t=$(cs show -r "$r" "$1" --sum bal --json 2>>"$LOG" |
	    json 'd["sum"]["total"] + sum(m["amount"] for c in d["channels"] for m in c["messages"] if m.get("key") == "frozen") + sum(x["amount"] for a in d["agents"] for x in a["dead_letters"] if x["state"] == "open" and x["key"] == "frozen")' 2>/dev/null)
	n_cutsum=$((n_cutsum + 1))
	[ "$t" = "$INIT_TOTAL" ] && return 0
	violation "$(( ${t:-0} - INIT_TOTAL ))" "the cut of snapshot $1 of $(basename "$r") sums to ${t:-nothing}, not $INIT_TOTAL"
	return 1
}

# No coordinator is alive: a snapshot still listed running must be
# flagged stale (ls, a reader, marks nothing aborted; the next snapshot
# does). Sets STALE to the stale ones.
ls_check () {
	local r
	r=$(read_ls "$REPO2" && json "[s['id'] for s in d if s['status'] == 'running'
	    and not s.get('stale')]" <"$W/ls.json") || return
	[ -z "$r" ] || violation 0 "snapshot(s) $(echo $r) of repo2 listed running, not stale, with no coordinator"
	r=$(read_ls && json "[s['id'] for s in d if s['status'] == 'running'
	    and not s.get('stale')]" <"$W/ls.json") || return
	[ -z "$r" ] || violation 0 "snapshot(s) $(echo $r) listed running, not stale, with no coordinator"
	STALE=$(json "[s['id'] for s in d if s['status'] == 'running']" <"$W/ls.json")
}

# After a snapshot completed: the stale ones listed before it are aborted.
stale_check () {
	local id
	for id in $STALE; do
		if status_is "$id" aborted; then
			log "stale snapshot $id marked aborted by the next one"
		else
			violation 0 "stale snapshot $id not marked aborted by the next snapshot"
		fi
	done
	STALE=""
}

# --- the loop ----------------------------------------------------------

start_s=$SECONDS
for rounds_done in $(seq 1 "$ROUNDS"); do
	BG=""
	transfers_bg
	run_faults round
	snapshot_round
	for p in $BG; do wait_pid "$p" 60; done
	BG=""
	# Restart what was killed most rounds; sometimes let a snapshot run
	# with an agent down first (it must abort).
	[ $((RANDOM % 5)) -ne 0 ] && restart_agents
	ls_check
	if [ $((RANDOM % 4)) -eq 0 ]; then
		ids=($(ids_with complete))
		if [ ${#ids[@]} -gt 0 ]; then
			id=${ids[$((RANDOM % ${#ids[@]}))]}
			verify_check "$id"
			restore_check "$id"
		fi
	fi
	if [ $((rounds_done % 10)) -eq 0 ]; then
		printf 'torture: round %d/%d, %d violation(s)\n' \
		    "$rounds_done" "$ROUNDS" "$n_viol" >&3
	fi
done

# --- the final check -----------------------------------------------------

loop_s=$((SECONDS - start_s))
restart_agents
# Channels drain once every agent is up: poll the live total, bounded.
live=""
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ]; do
	cs start -c "$CONF" >/dev/null 2>&1
	live=$(live_total) || live=""
	[ "$live" = "$INIT_TOTAL" ] && break
	sleep 0.2
done
if [ "$live" != "$INIT_TOTAL" ]; then
	violation $(( ${live:-0} - INIT_TOTAL )) "live total ${live:-unreadable} after draining, not $INIT_TOTAL"
else
	# Still so a moment later: no late duplicate delivery.
	sleep 1
	live=$(live_total) || live=""
	[ "$live" = "$INIT_TOTAL" ] ||
	    violation $(( ${live:-0} - INIT_TOTAL )) "live total moved to ${live:-unreadable} after draining"
fi
ls_check
# overlap_restored REPO ID: count a complete overlapping snapshot
# restored here.
overlap_restored () {
	grep -qx "$1 $2" "$W/overlap.ids" 2>/dev/null &&
	    n_overlap_restored=$((n_overlap_restored + 1))
}
n_overlap_restored=0
for id in $(ids_with complete); do
	verify_check "$id"
	restore_check "$id" && overlap_restored "$REPO" "$id"
done
# The second repository's, filled by overlapping snapshots only.
n_repo2=0
read_ls "$REPO2"
for id in $(json "[s['id'] for s in d if s['status'] == 'complete']" <"$W/ls.json"); do
	verify_check "$id" "$REPO2"
	restore_check "$id" "$REPO2" && overlap_restored "$REPO2" "$id"
	n_repo2=$((n_repo2 + 1))
done
[ "${STRUCK[overlap]:-0}" -gt 0 ] && distinct_ids
# The figures, from ls --json: snapshots by status (a stale running one,
# whose coordinator is gone, counts as aborted), messages recorded in
# flight by the complete ones, and how many of those recorded any.
read_ls
read -r n_complete n_aborted n_inflight n_with_inflight < <(json '
" ".join(str(x) for x in (
    sum(1 for s in d if s["status"] == "complete"),
    sum(1 for s in d if s["status"] == "aborted" or
        s["status"] == "running" and s.get("stale")),
    sum(s["msgs"] for s in d if s["status"] == "complete"),
    sum(1 for s in d if s["status"] == "complete" and s["msgs"] > 0)))' \
    <"$W/ls.json" 2>/dev/null)
n_xfer_ok=$(grep -c '^ok' "$W/xfer.res")
n_xfer_fail=$(grep -c '^fail' "$W/xfer.res")

# A run that checked nothing has not passed.
nothing=""
[ "${n_complete:-0}" -gt 0 ] || nothing="$nothing, no complete snapshot"
[ "$n_verify" -gt 0 ] || nothing="$nothing, no verify"
[ "$n_restore" -gt 0 ] || nothing="$nothing, no restore"
[ "${n_inflight:-0}" -gt 0 ] || nothing="$nothing, no message recorded in flight"
if [ "${STRUCK[overlap]:-0}" -gt 0 ]; then
	[ "$n_overlap_checked" -gt 0 ] ||
	    nothing="$nothing, no overlapping snapshot checked"
	[ "$n_overlap_restored" -gt 0 ] ||
	    nothing="$nothing, no overlapping snapshot restored"
	[ "$n_overlap_idchecks" -gt 0 ] ||
	    nothing="$nothing, no ids compared"
fi
if [ "${STRUCK[partial_restore]:-0}" -gt 0 ]; then
	[ "$n_part" -gt 0 ] ||
	    nothing="$nothing, no partial restore checked"
	[ $((n_part_lifted + n_part_resolved)) -eq "$n_part" ] ||
	    nothing="$nothing, a partial restore neither lifted nor resolved"
fi
nothing=${nothing#, }

kills=0 kill_list="" kill_kv=""
for f in $(fault_names); do
	kills=$((kills + ${STRUCK[$f]:-0}))
	kill_list="$kill_list, $f ${STRUCK[$f]:-0}"
	kill_kv="$kill_kv $f=${STRUCK[$f]:-0}"
done
result=PASS
[ "$n_viol" -eq 0 ] && [ -z "$nothing" ] || result=FAIL

# --- the report ------------------------------------------------------------

cat <<EOF
cutsnap torture: seed $SEED, $NAG agents, initial total $INIT_TOTAL$([ "$ENCRYPT" = 1 ] && echo ", encrypted repository")$([ "$TCP" = 1 ] && echo ", agents on TCP with mutual TLS")
  rounds            $ROUNDS in $loop_s s, $((SECONDS - start_s)) s with the final checks
  transfers         $n_xfer_ok ok, $n_xfer_fail refused or failed ($n_held_msgs sent over $n_holds held channels)
  faults            $kills:${kill_list#,}
  snapshots         ${n_complete:-?} complete, ${n_aborted:-?} aborted (coordinator exit 0: $n_snap_ok, non-zero or killed: $n_snap_fail)
  in flight         ${n_inflight:-?} messages recorded by ${n_with_inflight:-?} of ${n_complete:-?} complete snapshots
  checks            $n_verify verify, $n_cutsum cut sums, $n_restore restores checked (each also run twice)
  dead letters      $n_dead_sent credits sent to text keys, $n_dead_resolved refunds started
  overlapping       $n_overlap times $n_overlap_started snapshots started together ($n_overlap_two times into two repositories): $n_overlap_ok exited 0 and listed complete, $n_overlap_checked verified and summed at once, $n_overlap_restored restored at the end; $n_repo2 complete in the second repository checked at the end
  partial restores  $n_part (a subset restored alone into the live cluster): $n_part_lifted lifted their fences, $n_part_resolved resolved by restoring the others; $n_part_refused transfers from fenced agents refused
  mixed histories   $n_mix mixes, $n_mix_diverged with diverged channels; transfers over them: $n_mix_refused refused as diverged, $n_mix_delivered of $n_mix_sent accepted ones delivered
  live total        ${live:-unreadable} (expected $INIT_TOTAL)
  violations        $n_viol
EOF
if [ "$n_viol" -gt 0 ]; then
	echo "  first             $first_viol"
	echo "  worst             $worst_viol"
fi
[ -n "$nothing" ] && echo "  checked nothing   $nothing"
[ "$result" = FAIL ] && echo "  log               $LOG"
echo "torture-summary: seed=$SEED agents=$NAG rounds=$ROUNDS encrypted=$ENCRYPT tcp=$TCP" \
    "seconds=$loop_s wall_seconds=$((SECONDS - start_s))" \
    "complete=${n_complete:-0}" \
    "aborted=${n_aborted:-0} inflight=${n_inflight:-0}" \
    "with_inflight=${n_with_inflight:-0} verifies=$n_verify" \
    "cut_sums=$n_cutsum restores=$n_restore transfers=$n_xfer_ok" \
    "dead_letters=$n_dead_sent refunds=$n_dead_resolved" \
    "kills=$kills$kill_kv mixes=$n_mix mixes_diverged=$n_mix_diverged" \
    "mix_refused=$n_mix_refused mix_delivered=$n_mix_delivered" \
    "overlaps=$n_overlap overlap_snapshots=$n_overlap_started" \
    "overlap_two_repos=$n_overlap_two overlap_complete=$n_overlap_ok" \
    "overlap_checked=$n_overlap_checked overlap_restored=$n_overlap_restored" \
    "repo2_checked=$n_repo2" \
    "partial=$n_part partial_lifted=$n_part_lifted" \
    "partial_resolved=$n_part_resolved partial_refused=$n_part_refused" \
    "violations=$n_viol result=$result"
if [ "$result" = FAIL ]; then
	KEEP=1
	echo "torture: FAIL"
	exit 1
fi
echo "torture: PASS"
exit 0

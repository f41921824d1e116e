# lib.sh - shared helpers for the end-to-end tests (bash; sourced by t*.sh).
#
# Every test script gets its own temporary directory (TEST_DIR, also the
# working directory), prints TAP ("ok N - desc" / "not ok N - desc" with the
# failing output as "# " lines) and ends with test_done, which prints the
# plan and exits non-zero when a case failed.  On exit everything the test
# started is killed by pid: the agents (found by the test's own directory in
# their command line), background snapshots and loops, the watchdog.
#
# Environment:
#   CUTSNAP        absolute path of the binary (default: bin/cutsnap of this
#                  checkout)
#   CUTSNAP_KEEP=1 keep the temporary directory (its path is printed)
#   TEST_TIMEOUT   seconds before a whole script is killed (default 300: a
#                  guard against hangs, not a time limit; sized for a
#                  machine twice as slow as the project VM usually is)
#   CS_TIMEOUT     seconds a single cutsnap command may take (default 30)
#   CUTSNAP_TEST_EXPENSIVE=1  run the scripts and cases that need the
#                  EXPENSIVE prerequisite (the fault loops, the clusters of
#                  many agents); `make test` sets it
#   CUTSNAP_TEST_SEED  the seed of the script's random choices (TEST_SEED,
#                  also bash's RANDOM); printed as "# seed N" so that a
#                  failure can be replayed with it. Default: 1 under CI (CI
#                  set) and in `make check`/`make test`, else drawn from
#                  the clock
#
# Prerequisites, as git's test-lib has them: a script that needs one
# declares it once, at its top, with test_require (the whole script is
# skipped without it, "1..0 # SKIP ... (missing NAME)"), or per case with
# test_expect_success NAME 'title' 'commands'. The Makefile reads the
# declarations: radosgw is started only for a selection in which a script
# declares S3, and the EXPENSIVE scripts start first.

set -u

_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CUTSNAP=${CUTSNAP:-$_lib_dir/../../bin/cutsnap}
case $CUTSNAP in
/*) ;;
*) CUTSNAP=$PWD/$CUTSNAP ;;
esac
TEST_NAME=$(basename "$0" .sh)
. "$_lib_dir/../python.sh"

test_count=0
test_failed=0
BG_PIDS=""
AGENT_PIDS=""
CONF=""
REPO=""
AGENTS=""

# A short base keeps socket paths (run_dir/NAME.sock) under 108 bytes.
_base=${TMPDIR:-/tmp}
[ ${#_base} -gt 40 ] && _base=/tmp
TEST_DIR=$(mktemp -d "$_base/cs-e2e.XXXXXX") || {
	echo "Bail out! cannot create a temporary directory"
	exit 1
}
OUT=$TEST_DIR/.out
ERR=$TEST_DIR/.err
# Writers keep their record of each repository's generation under
# XDG_STATE_HOME: the test's own, not the user's.
export XDG_STATE_HOME=$TEST_DIR/.state

if [ ! -x "$CUTSNAP" ]; then
	echo "Bail out! no cutsnap binary at $CUTSNAP (run make, or set CUTSNAP)"
	rm -rf "$TEST_DIR"
	exit 1
fi

# wire_version: the protocol version the command speaks (the "protocol"
# of --version --json), for the tests that write frames themselves.
wire_version () {
	"$CUTSNAP" --version --json |
	    python3 -c "import json, sys; print(json.load(sys.stdin)[\"protocol\"])"
}

# Pids of processes whose command line mentions this test's directory.
own_pids () {
	pgrep -f -- "$TEST_DIR" 2>/dev/null | while read -r p; do
		[ "$p" != "$$" ] && echo "$p"
	done
}

_cleanup () {
	local p pids n
	trap - EXIT INT TERM
	for p in $BG_PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	if [ -n "$CONF" ] && [ -f "$CONF" ]; then
		timeout -k 2 5 "$CUTSNAP" stop -c "$CONF" >/dev/null 2>&1
	fi
	n=0
	while :; do
		pids="$(own_pids) $AGENT_PIDS"
		pids=$(for p in $pids; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
		[ -z "$pids" ] && break
		if [ $n -lt 20 ]; then
			kill -TERM $pids 2>/dev/null
		else
			kill -KILL $pids 2>/dev/null
		fi
		n=$((n + 1))
		[ $n -gt 40 ] && break
		sleep 0.1
	done
	[ -n "${_watchdog:-}" ] && kill -TERM "$_watchdog" 2>/dev/null
	if [ "${CUTSNAP_KEEP:-0}" = 1 ]; then
		echo "# kept $TEST_DIR"
	else
		rm -rf "$TEST_DIR"
	fi
}
trap _cleanup EXIT
trap 'echo "# interrupted"; exit 130' INT
trap 'echo "# killed (over TEST_TIMEOUT?)"; exit 143' TERM

# The whole script is bounded: the watchdog sends SIGTERM, the trap cleans.
# Killing the watchdog also ends its sleep.
(
	trap 'kill "$_s" 2>/dev/null; exit 0' TERM
	sleep "${TEST_TIMEOUT:-300}" &
	_s=$!
	wait "$_s" && kill -TERM $$
) >/dev/null 2>&1 &
_watchdog=$!

cd "$TEST_DIR" || exit 1

# --- the seed ------------------------------------------------------------

# One seed for every random choice the script makes, so that a run can be
# replayed: scripts derive their loops' seeds from TEST_SEED (bash reseeds
# RANDOM in each subshell, so a background loop sets RANDOM itself).
if [ -n "${CUTSNAP_TEST_SEED:-}" ]; then
	TEST_SEED=$CUTSNAP_TEST_SEED
elif [ -n "${CI:-}" ]; then
	TEST_SEED=1
else
	TEST_SEED=$(( $(date +%s%N) % 32768 ))
fi
case $TEST_SEED in
'' | *[!0-9]* | ??????????*)
	echo "Bail out! CUTSNAP_TEST_SEED must be a number below 10^9, not '$TEST_SEED'"
	exit 1 ;;
esac
RANDOM=$TEST_SEED
echo "# seed $TEST_SEED (CUTSNAP_TEST_SEED=$TEST_SEED replays it)"

# --- prerequisites --------------------------------------------------------

_prereq_set=" "		# satisfied
_prereq_tested=" "	# lazy ones already evaluated
_prereq_lazy=" "	# lazy ones declared
_prereq_required=" "	# declared by the script with test_require

# test_set_prereq NAME: NAME holds from now on.
test_set_prereq () {
	_prereq_set="$_prereq_set$1 "
}

# test_lazy_prereq NAME 'commands': NAME holds when the commands succeed;
# they run once, at the first question, in a subshell, output discarded.
test_lazy_prereq () {
	_prereq_lazy="$_prereq_lazy$1 "
	eval "_prereq_script_$1=\$2"
}

# test_have_prereq LIST: every prerequisite of the comma-separated LIST
# holds (!NAME: NAME does not). The ones that do not are left in
# MISSING_PREREQ, comma-separated.
test_have_prereq () {
	local p neg name script ok
	MISSING_PREREQ=""
	for p in ${1//,/ }; do
		name=${p#!}
		neg=""
		[ "$name" != "$p" ] && neg=1
		case $_prereq_lazy in
		*" $name "*)
			case $_prereq_tested in
			*" $name "*) ;;
			*)
				eval "script=\$_prereq_script_$name"
				if (mkdir -p "$TEST_DIR/.prereq" &&
				    cd "$TEST_DIR/.prereq" && eval "$script") \
				    >/dev/null 2>&1 </dev/null; then
					test_set_prereq "$name"
				fi
				_prereq_tested="$_prereq_tested$name "
				;;
			esac
			;;
		esac
		case $_prereq_set in
		*" $name "*) ok=1 ;;
		*) ok="" ;;
		esac
		if [ "$ok" = "$neg" ]; then
			MISSING_PREREQ="${MISSING_PREREQ:+$MISSING_PREREQ,}$p"
		fi
	done
	[ -z "$MISSING_PREREQ" ]
}

# test_require LIST: the script needs every prerequisite of LIST; without
# one it is skipped as a whole ("1..0 # SKIP", which prove reports as
# skipped with the reason). Before the first case, at the script's top,
# where the Makefile reads it (grep '^test_require').
test_require () {
	local p
	if [ "$test_count" -gt 0 ]; then
		echo "Bail out! $TEST_NAME: test_require $1 after the first case"
		exit 1
	fi
	for p in ${1//,/ }; do
		_prereq_required="$_prereq_required$p "
	done
	test_have_prereq "$1" && return 0
	echo "1..0 # SKIP skip all of $TEST_NAME (missing $MISSING_PREREQ)"
	_prereq_hints "$MISSING_PREREQ"
	exit 0
}

# test_required NAME: the script declared NAME with test_require (the
# helpers of lib-s3.sh refuse to run in a script that did not: the
# Makefile would not have started the server for it).
test_required () {
	case $_prereq_required in *" $1 "*) return 0 ;; esac
	return 1
}

# What to do about a missing prerequisite, as "# " lines.
_prereq_hints () {
	local p
	for p in ${1//,/ }; do
		case ${p#!} in
		EXPENSIVE) echo "# EXPENSIVE: set CUTSNAP_TEST_EXPENSIVE=1 (make test does)" ;;
		S3) echo "# S3: install radosgw (sh scripts/deps.sh test)" ;;
		ROOT | NETNS | NOBODY | SYSTEMD) echo "# ${p#!}: needs root (and, for NETNS, ip netns; for SYSTEMD, a machine booted with systemd)" ;;
		esac
	done
}

# The prerequisites every script may ask for.
test_lazy_prereq EXPENSIVE '[ "${CUTSNAP_TEST_EXPENSIVE:-0}" = 1 ]'
test_lazy_prereq ROOT '[ "$(id -u)" = 0 ]'
# A namespace can be made (root, and not refused by a container).
test_lazy_prereq NETNS '
	[ "$(id -u)" = 0 ] && ip netns add "cs-probe-$$" &&
	ip netns del "cs-probe-$$"
'
# Root can run the binary as uid 65534 (a user who owns nothing here).
test_lazy_prereq NOBODY '
	[ "$(id -u)" = 0 ] && command -v setpriv &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CUTSNAP" --help
'
# The machine runs systemd (a unit can be started), as root.
test_lazy_prereq SYSTEMD '
	[ "$(id -u)" = 0 ] &&
	{ systemctl is-system-running || [ -d /run/systemd/system ]; }
'
# An S3 server: the one the run started (CUTSNAP_S3_ENV; when it failed to
# start, lib-s3.sh fails the script rather than skip it), or radosgw to
# start one of the script's own.
test_lazy_prereq S3 '[ -n "${CUTSNAP_S3_ENV:-}" ] || command -v radosgw'
test_lazy_prereq PYTHON3 'command -v python3'
test_lazy_prereq VALGRIND \
    'command -v valgrind && [ -z "${CUTSNAP_NO_VALGRIND:-}" ]'
# CUTSNAP is a sanitizer build (make asan), which valgrind cannot run.
test_lazy_prereq ASAN 'ldd "$CUTSNAP" | grep -q libasan'
test_lazy_prereq SS 'command -v ss'
test_lazy_prereq PY_CRYPTOGRAPHY \
    'python3 -c "import cryptography.hazmat.primitives.ciphers.aead"'
test_lazy_prereq PY_PROMETHEUS 'python3 -c "import prometheus_client.parser"'

# --- TAP ---------------------------------------------------------------

# test_expect_success [PREREQ] 'description' 'commands'
# The commands run in this shell (variables they set persist); chain them
# with &&.  Their output is shown only when the case fails. With PREREQ (a
# comma-separated list) missing, the case is skipped: "ok N # skip
# description (missing PREREQ)".
test_expect_success () {
	local desc body log rc
	if [ $# = 3 ]; then
		if ! test_have_prereq "$1"; then
			test_count=$((test_count + 1))
			echo "ok $test_count # skip $2 (missing $MISSING_PREREQ)"
			return 0
		fi
		shift
	fi
	desc=$1 body=$2
	test_count=$((test_count + 1))
	log=$TEST_DIR/.log.$test_count
	# A function, so that "return 1" in the body ends the case only.
	eval "_test_body () {
$body
}" && _test_body >"$log" 2>&1 </dev/null
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok $test_count - $desc"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $desc"
		# The why on stderr, which prove shows without -v (a CI log
		# then says what failed, not only which case).
		{
			echo "#   $TEST_NAME: case $test_count failed with status $rc:"
			printf '%s\n' "$body" | sed 's/^/#   | /'
			tail -n 60 "$log" | sed 's/^/#   /'
			# The agents' last words: what a flaky case in CI left
			# to diagnose it by.
			find "$TEST_DIR" -maxdepth 3 -path '*run*' -name '*.log' \
			    -type f 2>/dev/null | sort | head -n 8 |
			while read -r f; do
				echo "#   --- ${f#"$TEST_DIR"/}, last lines:"
				tail -n 12 "$f" | sed 's/^/#   /'
			done
		} >&2
	fi
	return 0
}

test_skip () {
	test_count=$((test_count + 1))
	echo "ok $test_count - $1 # SKIP $2"
}

test_done () {
	echo "1..$test_count"
	if [ $test_failed -gt 0 ]; then
		echo "# $TEST_NAME: $test_failed of $test_count failed"
		exit 1
	fi
	exit 0
}

# --- running cutsnap ---------------------------------------------------

# cs ARGS...: the binary, bounded in time.
cs () {
	timeout -k 5 "${CS_TIMEOUT:-30}" "$CUTSNAP" "$@"
}

say () { printf '%s\n' "$*" >&2; }

# cutsnap_pid PID: the cutsnap process started by "cs ... &" whose $! is
# PID. Bash may or may not exec the function's last command in the
# background subshell, so PID is either timeout or a subshell running it:
# look up to two levels down for the process named cutsnap* (cutsnap-asan
# under make asan). A kill -9 sent to timeout would miss cutsnap, and
# timeout relays other signals twice (to cutsnap, then to its process
# group) and adds a SIGCONT, which is not what a test means to send.
cutsnap_pid () {
	local p q
	for p in "$1" $(pgrep -P "$1"); do
		for q in $p $(pgrep -P "$p"); do
			case $(cat "/proc/$q/comm" 2>/dev/null) in
			cutsnap*) echo "$q"; return 0 ;;
			esac
		done
	done
	say "no cutsnap process under $1"
	return 1
}

show_out () {
	say "--- stdout:"
	head -c 2000 "$OUT" | sed 's/^/    /' >&2
	say "--- stderr:"
	head -c 2000 "$ERR" | sed 's/^/    /' >&2
}

# expect_exit CODE ARGS...: run cutsnap with ARGS (stdout in $OUT, stderr in
# $ERR, status in $RC); succeed iff the status matches CODE, a case
# pattern such as 0 or [12], or one of a list such as "1|2|10".
expect_exit () {
	local want=$1
	shift
	cs "$@" >"$OUT" 2>"$ERR"
	RC=$?
	# shellcheck disable=SC2254
	case $RC in
	$want) return 0 ;;
	esac
	# "1|2|10" from a variable is no case alternation: one status each.
	case "|$want|" in
	*"|$RC|"*) return 0 ;;
	esac
	say "cutsnap $*: expected exit $want, got $RC"
	show_out
	return 1
}

expect_ok () { expect_exit 0 "$@"; }

# stderr of the last command is exactly one line starting "cutsnap: ".
err_is_one_line () {
	local n
	n=$(wc -l <"$ERR")
	if [ "$n" -ne 1 ] || ! head -n 1 "$ERR" | grep -q '^cutsnap: .'; then
		say "expected exactly one stderr line starting 'cutsnap: ', got $n line(s):"
		show_out
		return 1
	fi
	# A trailing newline makes it a line; no partial second line either.
	if [ -n "$(tail -c 1 "$ERR")" ]; then
		say "stderr does not end with a newline"
		return 1
	fi
	return 0
}

# expect_error CODE ARGS...: the exit status matches CODE and stderr is
# exactly one "cutsnap: ..." line.
expect_error () {
	expect_exit "$@" && err_is_one_line
}

# The last command's stderr matches the extended regex (case-insensitive).
err_matches () {
	grep -Eqi -- "$1" "$ERR" && return 0
	say "stderr does not match /$1/:"
	show_out
	return 1
}

# at_least N WHAT [ITEM...]: there are at least N ITEMs, e.g. the ids a
# loop is about to check (a loop over nothing asserts nothing); says how
# many there were when too few.
at_least () {
	local n=$1 what=$2
	shift 2
	[ $# -ge "$n" ] && return 0
	say "expected at least $n $what, found $#: $*"
	return 1
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq () {
	[ "$1" = "$2" ] && return 0
	say "$3: expected '$2', found '$1'"
	return 1
}

# no_temps: no restore temp file (*.data.tmp.*) beside the data files in
# the current directory.
no_temps () {
	local n
	n=$(find . -maxdepth 1 -name "*.data.tmp.*" | wc -l)
	[ "$n" = 0 ] || { say "$n temp files left"; ls -la; return 1; }
}

# wait_for SECONDS CMD...: poll CMD (every 0.1 s) until it succeeds; fail
# once SECONDS have passed.
wait_for () {
	local t=$1 end
	shift
	end=$((SECONDS + t))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		if [ $SECONDS -ge $end ]; then
			say "timed out after ${t}s waiting for: $*"
			return 1
		fi
		sleep 0.1
	done
}

# agent_kib NAME FIELD: FIELD (VmHWM, VmRSS) of agent NAME's
# /proc/PID/status, KiB.
agent_kib () {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$(agent_pid "$1")/status"
}

# kib_below KIB LIMIT WHAT: say WHAT is KIB KiB; fail when KIB is empty
# or above LIMIT. Under AddressSanitizer (a binary named *-asan) sizes
# measure its shadow memory and the quarantine of freed blocks, not the
# agent: the bound is reported, not asserted.
kib_below () {
	say "$3: $1 KiB (limit $2 KiB)"
	[ -n "$1" ] || return 1
	case $(basename "$CUTSNAP") in
	*-asan) return 0 ;;
	esac
	[ "$1" -le "$2" ]
}

# --- a cluster ---------------------------------------------------------

# make_config NAMES...: TEST_DIR/cluster.ini, full mesh unless CHANNELS is
# set (e.g. CHANNELS="A>B B>C"); data files NAME.data, run_dir run.
make_config () {
	local n
	CONF=$TEST_DIR/cluster.ini
	AGENTS="$*"
	{
		echo "; cluster for $TEST_NAME"
		echo "[cluster]"
		echo "run_dir = run"
		[ -n "${CHANNELS:-}" ] && echo "channels = $CHANNELS"
		for n in "$@"; do
			echo ""
			echo "[agent $n]"
			echo "data = $n.data"
		done
	} >"$CONF"
	REPO=$TEST_DIR/repo
}

# _agent_name PID: set AGENT_NAME to NAME when PID runs "... agent ...
# -n NAME" (or --name NAME, --name=NAME, -nNAME); fail for any other
# process. Shell builtins only: with 80 agents, a tr and a grep per
# process and per name made _record_agent_pids start 12,800 processes.
_agent_name () {
	local a i is_agent=1
	AGENT_NAME=""
	mapfile -d '' -t a <"/proc/$1/cmdline" 2>/dev/null || return 1
	for ((i = 0; i < ${#a[@]}; i++)); do
		case ${a[i]} in
		agent) is_agent=0 ;;
		--name) [ $is_agent = 0 ] && AGENT_NAME=${a[i + 1]:-} ;;
		--name=*) [ $is_agent = 0 ] && AGENT_NAME=${a[i]#--name=} ;;
		esac
	done
	[ -n "$AGENT_NAME" ]
}

# Pids of the running agents of this test named NAME (processes of this
# test running the "agent" subcommand with --name NAME).
# Prints nothing and fails when there is none.
agent_pid () {
	local p found=1
	for p in $(own_pids); do
		if _agent_name "$p" && [ "$AGENT_NAME" = "$1" ]; then
			echo "$p"
			found=0
		fi
	done
	return $found
}

# Remember the pids of this test's agents named in AGENTS (stop_cluster
# checks they are gone); one pass over the test's processes.
_record_agent_pids () {
	local p
	for p in $(own_pids); do
		_agent_name "$p" || continue
		case " $AGENTS " in *" $AGENT_NAME "*) ;; *) continue ;; esac
		case " $AGENT_PIDS " in
		*" $p "*) ;;
		*) AGENT_PIDS="$AGENT_PIDS $p" ;;
		esac
	done
}

# start_cluster [ARGS...]: `cutsnap start` with ARGS (for example
# --timeout 60 for a cluster of many agents under a sanitizer).
start_cluster () {
	expect_ok start -c "$CONF" "$@" || return 1
	_record_agent_pids
	return 0
}

# agent_alive PID: PID still runs an agent of this test. A pid recorded
# for an agent killed long ago may by now belong to another process (pids
# wrap quickly while the suite starts thousands of processes): only one
# whose command line still names this test's directory counts.
agent_alive () {
	local a
	pid_gone "$1" && return 1
	mapfile -d '' -t a <"/proc/$1/cmdline" 2>/dev/null || return 1
	case " ${a[*]} " in *"$TEST_DIR"*) return 0 ;; esac
	return 1
}

# stop, then check that every agent process we knew of has exited.
stop_cluster () {
	local p
	expect_ok stop -c "$CONF" || return 1
	for p in $AGENT_PIDS; do
		if agent_alive "$p"; then
			say "agent pid $p still alive after 'cutsnap stop' returned"
			return 1
		fi
	done
	AGENT_PIDS=""
	return 0
}

bal () { cs get -c "$CONF" "$1" bal; }

# total [KEY]: the sum over every agent (live); fails if one does not answer
# or a value is not an integer.
# shellcheck disable=SC2120
total () {
	local n v s=0 key=${1:-bal}
	for n in $AGENTS; do
		v=$(cs get -c "$CONF" "$n" "$key") || return 1
		case $v in
		'' | *[!0-9-]*) return 1 ;;
		esac
		s=$((s + v))
	done
	echo "$s"
}

total_is () { [ "$(total)" = "$1" ]; }

# dump_val DATAFILE KEY: the key's value in the offline dump (--json);
# fails when the file cannot be read or has no such key.
# The dump goes through a file: held in a shell variable, a file of 1 MiB
# values (51 MiB of JSON) took seconds of bash's CPU a call.
dump_val () {
	local j=$TEST_DIR/.dump.$BASHPID rc
	cs dump "$1" --json >"$j" &&
	    json_get "d[\"keys\"][sys.argv[3]]" "$j" "$2" 2>/dev/null
	rc=$?
	rm -f "$j"
	return $rc
}

# restored_alone FILE WHOLE ID: FILE, restored by restore --agent without
# the rest of its cluster, is WHOLE (the same agent's file from a whole
# restore of snapshot ID) followed by one FENCE record of ID (18 bytes:
# the record header, its type, on, the snapshot).
restored_alone () {
	local n j=$TEST_DIR/.fence.$BASHPID
	n=$(stat -c %s "$2") &&
	expect_eq "$(stat -c %s "$1")" $((n + 18)) "size of $1" &&
	cmp -n "$n" "$1" "$2" &&
	cs dump "$1" --json >"$j" &&
	expect_eq "$(json_get 'd["fenced"]' "$j")" "$3" "$1 fenced from"
}

# dump_total KEY: the sum of KEY over every agent's data file (offline).
dump_total () {
	local n v s=0
	for n in $AGENTS; do
		v=$(dump_val "$TEST_DIR/$n.data" "$1") || return 1
		s=$((s + v))
	done
	echo "$s"
}

# set_balances A=100 B=50 ...
set_balances () {
	local kv
	for kv in "$@"; do
		cs put -c "$CONF" "${kv%%=*}" bal "${kv#*=}" >/dev/null || return 1
	done
}

# put_random AGENT N: keys r1..rN of AGENT, 3000 random bytes each (with
# a small CUTSNAP_CHUNK_SIZE, every chunk distinct).
put_random () {
	local i
	for i in $(seq 1 "$2"); do
		head -c 3000 /dev/urandom | cs put -c "$CONF" "$1" "r$i" - ||
		    return 1
	done
}

# --- snapshots and the repository ---------------------------------------

# The snapshot id a snapshot command printed to file $1 (text or --json).
_parse_id () {
	case $(head -c 1 "$1") in
	'{') json_get 'd.get("id") or ""' "$1" ;;	# --json: its "id" member
	*) grep -Eo '[0-9]+' "$1" | head -n 1 ;;	# text: the id alone
	esac
}

# take_snapshot [ARGS...]: a snapshot that must complete; sets SNAP_ID.
take_snapshot () {
	expect_ok snapshot -c "$CONF" -r "$REPO" "$@" || return 1
	SNAP_ID=$(_parse_id "$OUT")
	[ -n "$SNAP_ID" ] || { say "snapshot printed no id"; show_out; return 1; }
}

# snapshot_bg [ARGS...]: start a snapshot in the background (SNAP_PID).
snapshot_bg () {
	cs snapshot -c "$CONF" -r "$REPO" "$@" \
	    >"$TEST_DIR/.snap.out" 2>"$TEST_DIR/.snap.err" &
	SNAP_PID=$!
	BG_PIDS="$BG_PIDS $SNAP_PID"
}

snapshot_running () { kill -0 "$SNAP_PID" 2>/dev/null; }

# snapshot_wait: wait for the background snapshot; SNAP_RC, SNAP_ID set;
# succeeds iff it exited 0.
snapshot_wait () { _snapshot_wait "$SNAP_PID" "$TEST_DIR/.snap" ""; }

# snapshot_in_flight AMOUNT [SNAPSHOT-ARGS...]: the seed case. A->B is
# held, a transfer of AMOUNT from A to B is under way, and B initiates a
# snapshot: B records at once, and the snapshot must still be running
# (it waits for A's marker behind the held message) until A->B is
# released. Waits for it; SNAP_RC and SNAP_ID set; succeeds iff it
# committed.
snapshot_in_flight () {
	local amount=$1
	shift
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal "$amount" &&
	snapshot_bg --initiator B "$@" &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait
}

# _snapshot_wait PID FILES TAG: wait for PID, whose output is FILES.out
# and FILES.err; SNAP_RC, SNAP_ID set; succeeds iff it exited 0 with an id.
_snapshot_wait () {
	wait "$1"
	SNAP_RC=$?
	SNAP_ID=$(_parse_id "$2.out")
	[ "$SNAP_RC" -eq 0 ] && [ -n "$SNAP_ID" ] && return 0
	say "background snapshot${3:+ $3} exited $SNAP_RC"
	say "--- stdout:"; sed 's/^/    /' "$2.out" >&2
	say "--- stderr:"; sed 's/^/    /' "$2.err" >&2
	return 1
}

# sql QUERY [DB]: one query against the manifest (default REPO's); waits
# while a cutsnap command holds the write lock.
sql () {
	sqlite3 -batch -noheader -cmd ".timeout 10000" \
	    "${2:-$REPO/manifest.db}" "$1"
}

# The status of snapshot ID in the manifest.
snap_status () { sql "select status from snapshots where id = $1"; }

# A snapshot is recorded as running in the manifest.
snapshot_is_running () {
	[ -f "$REPO/manifest.db" ] &&
	    [ -n "$(sql "select id from snapshots where status = 'running'" 2>/dev/null)" ]
}

# chunk_paths ID AGENT: the blobs of the agent's recorded file of snapshot
# ID, one per line, in file order (the file is their concatenation).
chunk_paths () {
	local sha n=0
	for sha in $(sql "select lower(sha256) from agent_chunks
	    where snapshot_id = $1 and agent = '$2' order by idx"); do
		echo "$REPO/blobs/${sha:0:2}/$sha"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || { say "no chunk rows for $2 in snapshot $1"; return 1; }
}

# chunk_bytes BLOB: the chunk a blob holds. A compressed repository's
# blobs are objects (docs/INTERNALS.md): "CSO1", a codec byte (0 stored,
# 1 zstd), 3 zero bytes, the length, then the chunk or its zstd frame.
chunk_bytes () {
	local magic codec
	magic=$(head -c 4 "$1") || return 1
	if [ "$magic" != CSO1 ]; then
		cat "$1"
		return
	fi
	codec=$(od -An -tu1 -j 4 -N 1 "$1" | tr -d ' ')
	case $codec in
	0) tail -c +17 "$1" ;;
	1) tail -c +17 "$1" | zstd -dcq ;;
	*) say "chunk_bytes: $1 has unknown codec $codec"; return 1 ;;
	esac
}

# blob_path ID AGENT: a file holding the agent's recorded file of snapshot
# ID: its blob REPO/blobs/xx/<sha256>, or, when the repository stores it
# in chunks (agent_chunks), the chunks joined into TEST_DIR/.assembled/<sha>.
blob_path () {
	local sha out c n
	sha=$(sql "select lower(sha256) from agents where snapshot_id = $1
	    and name = '$2'") || return 1
	[ -n "$sha" ] || { say "no agents row for $2 in snapshot $1"; return 1; }
	if [ -f "$REPO/blobs/${sha:0:2}/$sha" ] &&
	    [ "$(head -c 4 "$REPO/blobs/${sha:0:2}/$sha")" != CSO1 ]; then
		echo "$REPO/blobs/${sha:0:2}/$sha"
		return 0
	fi
	n=$(sql "select count(*) from agent_chunks where snapshot_id = $1
	    and agent = '$2'" 2>/dev/null) || n=0
	if [ "${n:-0}" -gt 0 ]; then
		mkdir -p "$TEST_DIR/.assembled" && out=$TEST_DIR/.assembled/$sha &&
		: >"$out" || return 1
		for c in $(sql "select lower(sha256) from agent_chunks where
		    snapshot_id = $1 and agent = '$2' order by idx"); do
			chunk_bytes "$REPO/blobs/${c:0:2}/$c" >>"$out" || return 1
		done
		[ "$(sha256sum "$out" | cut -d" " -f1)" = "$sha" ] ||
		    { say "chunks of $2 in snapshot $1 do not add up to $sha"; return 1; }
		echo "$out"
		return 0
	fi
	say "no blob for $2 in snapshot $1 ($sha)"
	return 1
}

# blob_val ID AGENT KEY: the key's value in the agent's recorded file.
blob_val () {
	local p
	p=$(blob_path "$1" "$2") || return 1
	dump_val "$p" "$3"
}

# Wait until the data files stop changing (agents idle after a restart:
# reconnects, acknowledgements).
files_settle () {
	local prev="" cur n=0
	while [ $n -lt 50 ]; do
		cur=$(cat "$@" 2>/dev/null | cksum)
		[ "$cur" = "$prev" ] && return 0
		prev=$cur
		n=$((n + 1))
		sleep 0.2
	done
	say "files kept changing: $*"
	return 1
}

# flip_byte FILE OFFSET: invert every bit of one byte in place.
flip_byte () {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	[ -n "$b" ] || { say "flip_byte: $1 has no byte at $2"; return 1; }
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((b ^ 255)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# status_get EXPR: the Python expression EXPR over the cluster's status
# --json (d: a list, one object per agent, up or down), printed as
# json_get does; fails when status prints no JSON or EXPR raises.
status_get () {
	cs status -c "$CONF" --json 2>/dev/null | json_get "$1" /dev/stdin 2>/dev/null
}

# agent_phase NAME: the snapshots a live agent takes part in, from status
# --json: a line "ID:PHASE" for each (PHASE joined, recording, recorded or
# reported), or "none"; fails when it does not answer.
agent_phase () {
	status_get "[\"\\n\".join([\"%d:%s\" % (s[\"id\"], s[\"phase\"])
	    for s in a[\"snapshots\"]] or [\"none\"])
	    for a in d if a[\"agent\"] == \"$1\" and a[\"up\"]][0]"
}

# agent_phase_is NAME PHASE-ERE: the agent takes part in a snapshot whose
# phase matches the extended regex (e.g. "recorded|reported").
agent_phase_is () {
	agent_phase "$1" | grep -Eqx "[0-9]+:($2)"
}

# agent_recorded NAME: the agent has recorded its state for a snapshot.
agent_recorded () { agent_phase_is "$1" "recording|recorded|reported"; }

# agents_idle: no agent that answers takes part in a snapshot.
agents_idle () {
	[ "$(status_get "all(not a[\"snapshots\"] for a in d if a[\"up\"])")" = true ]
}

# wait_recorded NAME: agent NAME has recorded its state for the background
# snapshot, or that snapshot has already ended (snapshot_wait tells how);
# bounded.
_recorded_or_done () { agent_recorded "$1" || ! snapshot_running; }
wait_recorded () {
	wait_for 10 _recorded_or_done "$1" || {
		say "status of the cluster:"
		cs status -c "$CONF" >&2
		return 1
	}
}

# messages_sha_ok ID: snapshot ID recorded messages, and every one of
# them hashes to the SHA-256 stored beside it.
messages_sha_ok () {
	[ "$(msg_count "$1")" -gt 0 ] ||
	    { say "snapshot $1 recorded no message to check"; return 1; }
	sql "select src, dst, seq, case typeof(sha256) when 'blob'
	    then lower(hex(sha256)) else lower(sha256) end from messages
	    where snapshot_id = $1" | while IFS='|' read -r s d q sha; do
		rm -f "$TEST_DIR/.msg"
		sql "select writefile('$TEST_DIR/.msg', data) from messages
		    where snapshot_id = $1 and src = '$s' and dst = '$d'
		    and seq = $q" >/dev/null || exit 1
		got=$(sha256sum "$TEST_DIR/.msg" | cut -d' ' -f1)
		[ "$got" = "$sha" ] || {
			say "message $s->$d #$q: sha256 $sha, data hashes to $got"
			exit 1
		}
	done
}

# chan_row ID SRC DST: "applied|sent" of the channel's row in the manifest.
chan_row () {
	sql "select applied, sent from channels where snapshot_id = $1
	    and src = '$2' and dst = '$3'"
}

# agent_size ID NAME: the recorded size of the agent's file.
agent_size () {
	sql "select size from agents where snapshot_id = $1 and name = '$2'"
}

# msg_count ID [SRC DST]: recorded messages of the snapshot (on a channel).
msg_count () {
	if [ $# -eq 3 ]; then
		sql "select count(*) from messages where snapshot_id = $1
		    and src = '$2' and dst = '$3'"
	else
		sql "select count(*) from messages where snapshot_id = $1"
	fi
}

bal_is () { [ "$(bal "$1")" = "$2" ]; }

# wait_bal AGENT VALUE: poll until the agent's live bal is VALUE.
wait_bal () {
	wait_for 10 bal_is "$1" "$2" && return 0
	say "bal of $1: expected $2, is $(bal "$1")"
	return 1
}

# msg_sum ID: the sum of the amounts of snapshot ID's recorded messages
# (chmsg.h: u8 op | bytes key (u32 length first) | i64 amount,
# little-endian [| 16-byte id when op is 2]).
msg_sum () {
	python3 - "$REPO/manifest.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select data from messages where snapshot_id = ?",
                  (int(sys.argv[2]),))
def amount(d):
    at = 5 + int.from_bytes(d[1:5], "little")
    return int.from_bytes(d[at:at + 8], "little", signed=True)
print(sum(amount(d) for (d,) in rows))
PY
}

# pid_gone PID: the process has exited (an exited process that its parent
# has not reaped yet, a zombie, counts as gone).
pid_gone () {
	! kill -0 "$1" 2>/dev/null ||
	    [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# json_get EXPR [FILE [ARG...]]: parse FILE (default $OUT; /dev/stdin
# reads a pipe) as JSON into d and print the value of the Python
# expression EXPR (ARGs are sys.argv[3...]): a string as it is, anything
# else as compact JSON.
json_get () {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' \
	    "${2:-$OUT}" "$1" "${@:3}"
}

# json_check EXPR [FILE]: succeed iff the Python expression EXPR is true
# of the JSON in FILE (default $OUT), parsed into d; on failure show d.
json_check () {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
if not eval(sys.argv[2]):
    sys.exit("json_check failed: %s\nin: %s" % (sys.argv[2], json.dumps(d)))' \
	    "${2:-$OUT}" "$1"
}

# --- repository locks ---------------------------------------------------
# hold_exclusive: a process that holds an exclusive repository lock the
# way store_lock does (flocked, then renamed into place); LOCKER its pid.
hold_exclusive () {
	mkdir -p "$REPO/locks" || return 1
	python3 - "$REPO/locks" >"$TEST_DIR/.locker" 2>&1 <<'PY' &
import fcntl, os, sys, time
d = sys.argv[1]
tmp = os.path.join(d, ".tmp-test")
f = open(tmp, "w")
fcntl.flock(f, fcntl.LOCK_EX)
f.write("host=elsewhere pid=%d mode=exclusive started=now\n" % os.getpid())
f.flush()
os.rename(tmp, os.path.join(d, "%d-1.lock" % os.getpid()))
print("ready", flush=True)
time.sleep(120)
PY
	LOCKER=$!
	BG_PIDS="$BG_PIDS $LOCKER"
	wait_for 10 grep -q ready "$TEST_DIR/.locker"
}

# --- several snapshots at once ------------------------------------------

# snapshot_bg_as TAG ARGS...: start "cutsnap snapshot -c CONF ARGS" in the
# background (give -r yourself; SNAP_CONF, when set, replaces CONF); its
# output goes to .snap-TAG.out/.err, its pid to SNAP_PIDS[TAG]. Any number
# may run at once.
declare -A SNAP_PIDS
snapshot_bg_as () {
	local tag=$1
	shift
	cs snapshot -c "${SNAP_CONF:-$CONF}" "$@" \
	    >"$TEST_DIR/.snap-$tag.out" 2>"$TEST_DIR/.snap-$tag.err" &
	SNAP_PIDS[$tag]=$!
	BG_PIDS="$BG_PIDS $!"
}

# snapshot_wait_as TAG: wait for it; SNAP_RC and SNAP_ID set; succeeds iff
# it exited 0 and printed an id.
snapshot_wait_as () {
	_snapshot_wait "${SNAP_PIDS[$1]}" "$TEST_DIR/.snap-$1" "$1"
}

# snapshots_at_least N [PHASES]: every agent takes part in at least N
# snapshots (status --json), each in one of PHASES (a Python list of
# names; default any phase).
snapshots_at_least () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st-many" 2>/dev/null &&
	    json_check "all(len([s for s in a['snapshots'] if ${2:-None} is None
	    or s['phase'] in ${2:-[]}]) >= $1 for a in d)" "$TEST_DIR/.st-many" \
	    2>/dev/null
}

# cut_total REPO ID [KEY]: the total of KEY (default bal) over the
# snapshot's recorded files and its messages in flight (show --sum).
cut_total () {
	cs show -r "$1" "$2" --sum "${3:-bal}" --json >"$TEST_DIR/.show" &&
	    json_get 'd["sum"]["total"]' "$TEST_DIR/.show"
}

# restore_each TOTAL REPO:ID...: restore each snapshot in turn into CONF's
# data paths (the agents stopped); each must give the total TOTAL of bal.
restore_each () {
	local want=$1 rid n=0
	shift
	for rid in "$@"; do
		expect_ok restore -r "${rid%:*}" "${rid##*:}" -c "$CONF" &&
		expect_eq "$(dump_total bal)" "$want" "total restored from $rid" ||
		return 1
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || { say "restore_each: nothing to restore"; return 1; }
}

# channels_settled: status exits 0, and every channel of the cluster is
# up, not diverged, and acknowledged up to what its sender sent
# (delivery finished).
channels_settled () {
	cs status -c "$CONF" --json >"$OUT" 2>"$ERR" || return 1
	json_check 'sum(len(a["out"]) for a in d) > 0 and all(o["up"] and
	    not o.get("diverged") and o["acked"] == o["sent"]
	    for a in d for o in a["out"]) and all(i["up"] and
	    not i.get("diverged") for a in d for i in a["in"])'
}

wait_channels_settled () {
	wait_for 15 channels_settled && return 0
	cat "$OUT" >&2
	return 1
}

# out_field SRC DST FIELD: FIELD of SRC's outgoing channel to DST in
# status --json (read also when status exits 1 because an agent is down).
out_field () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st.json"
	json_get "[o for a in d if a[\"agent\"] == \"$1\" for o in a[\"out\"]
	    if o[\"dst\"] == \"$2\"][0][\"$3\"]" "$TEST_DIR/.st.json"
}

# channel_drained SRC DST: DST has applied every message SRC sent on
# SRC->DST, and SRC has seen it acknowledged (nothing queued).
channel_drained () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st.json" &&
	    json_check "([(o[\"sent\"] == o[\"acked\"], o[\"queued\"])
	        for a in d if a[\"agent\"] == \"$1\" for o in a[\"out\"]
	        if o[\"dst\"] == \"$2\"] == [(True, 0)] and
	        [i[\"applied\"] for a in d if a[\"agent\"] == \"$2\"
	        for i in a[\"in\"] if i[\"src\"] == \"$1\"] ==
	        [o[\"sent\"] for a in d if a[\"agent\"] == \"$1\"
	        for o in a[\"out\"] if o[\"dst\"] == \"$2\"])" \
	    "$TEST_DIR/.st.json"
}

# --- the fault loop's summary (tests/torture/torture.sh) ---------------

# sumfield KEY FILE: the value of KEY=VALUE on the "torture-summary:" line
# of FILE; fails when there is no such line or key.
sumfield () {
	sed -n 's/^torture-summary: //p' "$2" | tr ' ' '\n' |
	    awk -F= -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }'
}

# positive KEY FILE: the summary's KEY is a number above 0.
positive () {
	local v
	v=$(sumfield "$1" "$2") || { say "no $1= in the summary"; return 1; }
	case $v in '' | *[!0-9]*) say "$1=$v is not a count"; return 1 ;; esac
	[ "$v" -gt 0 ] || { say "$1=$v: the run checked none"; return 1; }
}

# --- the documents' commands (tests/doctest.py) ------------------------

# doc_path_setup: "cutsnap" on PATH is the binary under test, as a reader
# of the documents types it.
doc_path_setup () {
	mkdir -p "$TEST_DIR/bin" && ln -sf "$CUTSNAP" "$TEST_DIR/bin/cutsnap"
	export PATH=$TEST_DIR/bin:$PATH
}

# doc_ok DOC: every command of DOC (a path from the tree's top) prints
# what DOC shows; DOC runs in a home directory of its own. Says which
# differ, and fails also when DOC has no command at all.
doc_ok () {
	local doc=$1 home=$TEST_DIR/home-$(basename "$1" .md)
	mkdir -p "$home" &&
	python3 "$_lib_dir/../doctest.py" "$_lib_dir/../../$doc" "$home" >"$home.json"
	local rc=$?
	python3 - "$home.json" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["failed"]:
    print("line %d: $ %s" % (f["line"], f["command"]))
    print("  expected:\n    " + "\n    ".join(f["expected"]))
    print("  printed:\n    " + "\n    ".join(f["actual"]))
print("%s: %d commands, %d differ" % (d["doc"], d["commands"], len(d["failed"])))
sys.exit(1 if d["failed"] or d["commands"] == 0 else 0)
PY
	return $rc
}

# doc_cases DOC...: a case per document, doc_ok; each document's agents
# are its own, stopped after it. Sets DOC_CASES to how many ran.
doc_cases () {
	local doc p
	DOC_CASES=0
	for doc in "$@"; do
		DOC_CASES=$((DOC_CASES + 1))
		test_expect_success "$doc: every command prints what it shows" \
		    "doc_ok $doc"
		for p in $(own_pids); do kill "$p" 2>/dev/null; done
	done
}

#!/bin/bash
# run.sh - cutsnap's benchmark: prints one table and writes bench/RESULTS.md.
#
# Every row is the median of N runs (N=3 unless noted) and is compared with
# a baseline measured in the same run on the same machine. Run it through
# "make bench" (builds bin/cutsnap and build/bench/syncw first).
#
# A step that fails (a failed or non-conserving load, a failed snapshot,
# verify or backup) stops the bench with "bench: FAIL: ..." and exit 1: no
# figure of a failed run is printed, and RESULTS.md is not written.
# Sourced ("BENCH_LIB=1 . bench/run.sh"), it only defines its helpers.
#
# Environment:
#   CUTSNAP      the binary (default: bin/cutsnap of this checkout)
#   BENCH_DIR    scratch directory (default: a new one under ${TMPDIR:-/tmp});
#                needs about 4 GiB free
#   BENCH_KEEP=1 keep the scratch directory
#   BENCH_RUNS   runs per row (default 3)
#   BENCH_ENC_MIB  MiB of data in the encrypted rows (default 256)
#   BENCH_S3_MIB  MiB of data in the object-storage rows (default 512)
#   BENCH_S3_HISTORY  the object-storage rows' bytes per commit are measured
#                after 1, 100 and this many earlier snapshots (default 1000,
#                about ten minutes; 100 or less: after 1, 10 and 100 only)
#   CUTSNAP_BENCH_ONLY=s3  run section 5 (object storage in radosgw) alone
#                and write its rows to bench/RESULTS-s3.md (not RESULTS.md)
# The encrypted rows (2b) use restic and borg too (make bench-deps); they take a
# few minutes more (each side backs up, checks and restores 2 x 256 MiB).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/tests/python.sh"
CS=${CUTSNAP:-$ROOT/bin/cutsnap}
SYNCW=$ROOT/build/bench/syncw
PINGPONG=$ROOT/build/bench/pingpong
SHAPAR=$ROOT/build/bench/shapar
KDFMS=$ROOT/build/bench/kdfms
DECPAR=$ROOT/build/bench/decpar
LIBGET=$ROOT/build/bench/libget
LIBTXN=$ROOT/build/bench/libtxn
NCPU=$(nproc)
RUNS=${BENCH_RUNS:-3}
RESULTS=$ROOT/bench/RESULTS.md
MIB=1048576

# --- helpers -------------------------------------------------------------

say () { printf '%s\n' "$*" >&2; printf '%s\n' "$*" >>"$LOG"; }

# fail TEXT: stop the bench (exit 1) after a failed step, before its
# figure is printed; RESULTS.md is not written. Called in a subshell
# (x=$(ms_of ...)), it stops the bench too: the signal makes the main
# shell exit 1 once the subshell has ended.
fail () {
	say "bench: FAIL: $*"
	[ "$BASHPID" = "$$" ] || kill -USR1 "$$"
	exit 1
}
trap 'exit 1' USR1

# cmd TEXT: note a command line for RESULTS.md (once per distinct text).
cmd () { grep -qxF -- "    $*" "$CMDS" || printf '    %s\n' "$*" >>"$CMDS"; }

now_ns () { date +%s%N; }

# timed ARRAY CMD...: run CMD (output to the log) and append its wall
# time in ms to the array named ARRAY; the bench fails if CMD fails.
timed () {
	local -n _ms=$1
	local t0 t1 rc
	shift
	t0=$(now_ns)
	"$@" >>"$LOG" 2>&1
	rc=$?
	t1=$(now_ns)
	[ $rc -eq 0 ] || fail "exit $rc: $*"
	_ms+=($(((t1 - t0) / 1000000)))
}

# ms_of CMD...: run CMD (output to the log) and print its wall time in ms;
# the bench fails if CMD fails.
ms_of () {
	local t=()
	timed t "$@"
	echo "${t[0]}"
}

# median V...: the median of numbers (the lower middle of an even count).
median () {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
	    awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a";
	        else print v[int((NR + 1) / 2)] }'
}

# fastest V...: the smallest of numbers.
fastest () {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
	    awk 'NR == 1 { print; f = 1 } END { if (!f) print "n/a" }'
}

# The rows of issue 16 (full snapshot, verify, restore) take RUNS5 runs
# of each side and show the fastest and the median, as their baselines
# swing with the disk's write-back; the verdict compares the fastest.
RUNS5=${BENCH_RUNS5:-5}
# fm ARRAY: "FASTEST (median MEDIAN)" of the numbers in ARRAY.
fm () {
	local -n _v=$1
	echo "$(fastest "${_v[@]}") (median $(median "${_v[@]}"))"
}
# ratio_fm A B: fastest A / fastest B (median A / median B).
ratio_fm () {
	local -n _a=$1 _b=$2
	echo "$(calc "$(fastest "${_a[@]}") / $(fastest "${_b[@]}")") ($(calc "$(median "${_a[@]}") / $(median "${_b[@]}")"))"
}

# calc EXPR: awk arithmetic, 2 decimals; n/a if an operand is n/a.
calc () {
	case "$*" in *n/a* | *error*) echo n/a; return ;; esac
	awk "BEGIN { v = $*; printf \"%.2f\", v }" 2>/dev/null || echo n/a
}

# verdict CONDITION-EXPR: PASS / FAIL (awk boolean), n/a on n/a.
verdict () {
	case "$*" in *n/a* | *error*) echo FAIL; return ;; esac
	awk "BEGIN { exit !($*) }" && echo PASS || echo FAIL
}

# floored VERDICT FLOOR OP TARGET WHAT: VERDICT, and on FAIL the floor
# measured in the same run (FLOOR, a ratio to the row's baseline: the
# best the hardware allows for the row's work, WHAT), e.g.
# "FAIL (floor 0.52x: write+fsync; target out of reach here)". OP says how
# the ratio meets the target (<= or >=); "out of reach" when the floor
# itself misses TARGET. The target itself is not changed.
floored () {
	local v=$1 fl=$2 op=$3 tg=$4 what=$5 reach=""
	case "$v" in PASS) echo PASS; return ;; esac
	case "$fl" in *n/a*) echo "FAIL (floor n/a: $what)"; return ;; esac
	awk "BEGIN { exit !($fl $op $tg) }" || reach="; target out of reach here"
	echo "FAIL (floor ${fl}x: $what$reach)"
}

# why VERDICT WHAT: VERDICT, and on FAIL what the same run measured that
# explains the miss where no floor can be measured (WHAT).
why () {
	case "$1" in PASS) echo PASS ;; *) echo "$1 ($2)" ;; esac
}

# hash_floor FILE...: the ms build/bench/shapar takes to SHA-256 the
# files' bytes split in $(nproc) ranges, one thread each (OpenSSL, as
# cutsnap hashes; its start-up left out): the hashing floor of a run
# that reads every byte once on every core. The bench fails if it fails.
hash_floor () {
	"$SHAPAR" "$NCPU" "$@" 2>>"$LOG" || fail "shapar $*"
}

# decode_floor FILE...: the ms build/bench/decpar takes to decompress and
# SHA-256 the files' bytes in 4 MiB pieces compressed as cutsnap
# compresses its chunks (the compression untimed), $(nproc) threads: the
# CPU floor of a verify that opens every chunk. The bench fails if it
# fails.
decode_floor () {
	"$DECPAR" "$NCPU" "$@" 2>>"$LOG" || fail "decpar $*"
}

# write_fsync DIR FILE...: write the files' bytes into DIR and fsync them
# (dd, 4 MiB direct writes, as a snapshot writes its chunks): the floor
# of any run that must make the same bytes durable.
write_fsync () {
	local d=$1 f
	shift
	for f in "$@"; do
		dd if="$f" of="$d/$(basename "$f")" bs=4M oflag=direct \
		    conv=fsync status=none || return 1
	done
}

# row WHAT VALUE BASELINE RATIO TARGET VERDICT
row () {
	printf '| %s | %s | %s | %s | %s | %s |\n' "$@" >>"$ROWS"
	printf '%-46s %-14s %-22s %-8s %-20s %s\n' "$1" "$2" "$3" "$4" "$5" "$6"
}

size_of () { stat -c %s "$1"; }
du_b () { du -sb "$1" | awk '{ print $1 }'; }
mib () { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# field NAME FILE: the value of NAME in the JSON object in FILE (a load
# --json summary): a string as it is, anything else as JSON (true, 1.5).
field () {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))[sys.argv[2]]
print(v if isinstance(v, str) else json.dumps(v))' "$2" "$1"
}

# load_checked OUT ARGS...: one "cutsnap load --json ARGS" run, its
# summary in OUT. The bench fails unless load exited 0 with the total
# conserved, no failed request and no failed snapshot.
load_checked () {
	local out=$1 rc
	shift
	"$CS" load --json "$@" >"$out" 2>>"$LOG"
	rc=$?
	load_verify "$out" "$rc" "$@"
}

# load_verify OUT RC ARGS...: the checks of load_checked on a summary in
# OUT of a load that exited RC.
load_verify () {
	local out=$1 rc=$2
	shift 2
	if [ "$rc" -eq 0 ] && [ "$(field conserved "$out" 2>/dev/null)" = true ] &&
	    [ "$(field failures "$out" 2>/dev/null)" = 0 ] &&
	    [ "$(field snapshot_failures "$out" 2>/dev/null)" = 0 ]; then
		return 0
	fi
	fail "cutsnap load $* (exit $rc): $(cat "$out")"
}

# make_cluster DIR N: a full-mesh config of N agents a1..aN in DIR.
make_cluster () {
	local d=$1 n=$2 i
	mkdir -p "$d"
	{
		echo "[cluster]"
		echo "run_dir = run"
		for i in $(seq 1 "$n"); do
			printf '\n[agent a%d]\ndata = a%d.data\n' "$i" "$i"
		done
	} >"$d/c.ini"
	CONFS="$CONFS $d/c.ini"
}

start () { "$CS" start -c "$1" >>"$LOG" 2>&1 || fail "start $1"; }
stop () { "$CS" stop -c "$1" >>"$LOG" 2>&1; }
# An agent remembers the ids of the snapshots it took part in, and a fresh
# repository numbers from 1 again: restart the agents before a snapshot
# into a fresh repository (they recover their files on start).
# The sync lets the deletion (and the discards of its blocks, on a disk
# mounted with discard) finish before anything is timed: otherwise the
# next timed run pays a varying part of it (a full snapshot measured 487
# and 1119 ms on the same code that way).
fresh () { stop "$1"; start "$1"; rm -rf "$2"; sync; }

# fill CONF AGENT FROM TO: put keys kFROM..kTO-1, 1 MiB each, distinct
# random contents (slices of $W/rand).
fill () {
	local c=$1 a=$2 i
	for i in $(seq "$3" $(($4 - 1))); do
		dd if="$W/rand" bs=1M skip=$((i % 1024)) count=1 status=none |
		    "$CS" put -c "$c" "$a" "k$i" - >>"$LOG" 2>&1 ||
		    fail "put k$i"
	done
}

# change CONF MIB: overwrite keys k0..k(MIB-1) with fresh random values.
change () {
	local c=$1 i
	head -c $(($2 * MIB)) /dev/urandom >"$W/change"
	for i in $(seq 0 $(($2 - 1))); do
		dd if="$W/change" bs=1M skip="$i" count=1 status=none |
		    "$CS" put -c "$c" a1 "k$i" - >>"$LOG" 2>&1 || fail "put k$i"
	done
}

vmhwm_kib () { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# agent_pid CONF NAME: the pid of the agent process started by "cutsnap start".
agent_pid () {
	pgrep -f -- "agent -c $1 --name $2\$" | head -n 1
}

# The rows of section 5 (compaction, concurrent snapshots).
. "$ROOT/bench/compact_concurrent.sh"
# The rows of section 4 (TCP + TLS against Unix sockets).
. "$ROOT/bench/tls.sh"

# commit_line: the exact commit measured (its full hash, as git describe
# --always prints it) and, when the tree differs from it (like describe
# --dirty, but bench/RESULTS.md, which the bench itself rewrites, does not
# count), that the figures are of uncommitted changes, in which files.
commit_line () {
	local d f
	d=$(git -C "$ROOT" describe --always --abbrev=40 2>/dev/null) ||
	    { echo "unknown (not a git checkout)"; return; }
	f=$(git -C "$ROOT" status --porcelain --untracked-files=no -- . \
	    ':(exclude)bench/RESULTS.md' ':(exclude)bench/RESULTS-s3.md' 2>/dev/null | awk '{ print $NF }')
	if [ -z "$f" ]; then
		echo "$d (clean tree)"
	else
		echo "$d-dirty: the tree had uncommitted changes, so these figures" \
		    "are not of $d alone (changed: $(printf '%s ' $f | cut -c1-200))"
	fi
}

# --- 2d. (defined here, run below) a paced snapshot ---------------------------
# The p99 of transfers while a snapshot copies a large file, unpaced and
# at snapshot_max_rate = PACE_RATE, each against the p99 of the same run
# outside any snapshot. 4 clients for 10 s, a snapshot every 2 s into a
# fresh repository per run (the first one copies the whole file). Runs
# alone too: BENCH_LIB=1 . bench/run.sh; W=DIR LOG=... ROWS=... CMDS=...
# pace_rows (t0123 does).
PACE_RATE=${BENCH_PACE_RATE:-32M}
PACE_MIB=${BENCH_PACE_MIB:-128}

# pace_p99 CONF REPO OUT: one checked load run; prints during / outside
# p99 (n/a when no transfer overlapped a snapshot).
pace_p99 () {
	fresh "$1" "$2"
	load_checked "$3" -c "$1" -s 10 --clients 4 --snapshot-every 2000 -r "$2"
	[ "$(field snapshots "$3")" -gt 0 ] || fail "paced run $3 completed no snapshot"
	say "pace run $3: $(cat "$3")"
	if [ "$(field during_snapshot_requests "$3")" = 0 ]; then
		echo n/a
	else
		calc "$(field during_snapshot_p99_ms "$3") / $(field outside_snapshot_p99_ms "$3")"
	fi
}

# pace_rows: the unpaced and the paced row, on a cluster of its own.
pace_rows () {
	local d=$W/pace c=$W/pace/c.ini r u=() p=() out
	make_cluster "$d" 3
	start "$c"
	for r in a1 a2 a3; do
		"$CS" put -c "$c" $r bal 1000000 >>"$LOG" 2>&1 || fail "put $r bal"
	done
	fill "$c" a1 0 "$PACE_MIB"
	for r in $(seq 1 "$RUNS"); do
		sed -i '/^snapshot_max_rate = /d' "$c"
		u+=("$(pace_p99 "$c" "$d/repo" "$W/pace.u.$r")") || exit 1
		sed -i "s/^run_dir = run\$/run_dir = run\nsnapshot_max_rate = $PACE_RATE/" "$c"
		p+=("$(pace_p99 "$c" "$d/repo" "$W/pace.p.$r")") || exit 1
	done
	cmd "cutsnap load -c CONF -s 10 --clients 4 --snapshot-every 2000 -r FRESH_REPO   # a1 = $PACE_MIB MiB; paced: snapshot_max_rate = $PACE_RATE"
	out=$W/pace.u.$RUNS
	row "p99 during / outside a snapshot, unpaced, a1 = $(mib "$(size_of "$d/a1.data")") MiB" \
	    "$(median "${u[@]}")x" \
	    "p99 outside $(field outside_snapshot_p99_ms "$out") / during $(field during_snapshot_p99_ms "$out") ms" \
	    "$(median "${u[@]}")" "-" "-"
	out=$W/pace.p.$RUNS
	row "p99 during / outside a snapshot at --max-rate $PACE_RATE" \
	    "$(median "${p[@]}")x" \
	    "p99 outside $(field outside_snapshot_p99_ms "$out") / during $(field during_snapshot_p99_ms "$out") ms" \
	    "$(median "${p[@]}")" "<= 2x" "$(verdict "$(median "${p[@]}") <= 2")"
	stop "$c"
	rm -rf "$d"
}

# The library rows: gets/s through libcutsnap (build/bench/libget) on one
# connection to an agent's Unix socket, one request at a time and 64
# pipelined, each against the command's gets/s (a process, a config read
# and a connection per get: what an application had before the library).
# The one-at-a-time row's floor is the round trips/s of one pingpong
# client (a Unix socket, no work). One agent, a 64-byte value. Runs alone
# too: BENCH_LIB=1 . bench/run.sh; W=DIR LOG=... ROWS=... CMDS=... lib_rows
LIB_SECONDS=${BENCH_LIB_SECONDS:-3}
LIB_CLI_CALLS=${BENCH_LIB_CLI_CALLS:-100}
lib_rows () {
	local d=$W/lib c=$W/lib/c.ini r i t0 one=() piped=() cli=() pp=()
	local v_one v_piped v_cli v_pp
	make_cluster "$d" 1
	start "$c"
	for r in $(seq 1 "$RUNS"); do
		one+=("$("$LIBGET" "$d/run/a1.sock" "$LIB_SECONDS" 1 2>>"$LOG")") ||
		    fail "libget"
		piped+=("$("$LIBGET" "$d/run/a1.sock" "$LIB_SECONDS" 64 2>>"$LOG")") ||
		    fail "libget, 64 pipelined"
		t0=$(now_ns)
		for i in $(seq 1 "$LIB_CLI_CALLS"); do
			"$CS" get -c "$c" a1 bench >/dev/null 2>>"$LOG" ||
			    fail "cutsnap get"
		done
		cli+=("$(calc "$LIB_CLI_CALLS / (($(now_ns) - $t0) / 1e9)")")
		pp+=("$("$PINGPONG" "$d" "$LIB_SECONDS" 1 1 1 2>>"$LOG")") ||
		    fail "pingpong, 1 client"
	done
	stop "$c"
	v_one=$(median "${one[@]}") v_piped=$(median "${piped[@]}")
	v_cli=$(median "${cli[@]}") v_pp=$(median "${pp[@]}")
	cmd "build/bench/libget SOCKET $LIB_SECONDS DEPTH   # DEPTH 1 and 64; against $LIB_CLI_CALLS x cutsnap get -c CONF a1 bench"
	cmd "build/bench/pingpong DIR $LIB_SECONDS 1 1 1   # one client's round trips/s"
	row "library gets/s, one connection, one at a time" "$v_one" \
	    "$v_cli gets/s (cutsnap get)" "$(calc "$v_one / $v_cli")" \
	    ">= 50000/s, >= 20x" \
	    "$(verdict "$v_one >= 50000 && $v_one >= 20 * $v_cli") (floor: one client's ping-pong, $v_pp round trips/s$(
	    [ "$(verdict "$v_pp >= 50000")" = FAIL ] && echo "; target out of reach here"))"
	row "library gets/s, one connection, 64 pipelined" "$v_piped" \
	    "$v_cli gets/s (cutsnap get)" "$(calc "$v_piped / $v_cli")" \
	    ">= 50000/s, >= 20x" \
	    "$(verdict "$v_piped >= 50000 && $v_piped >= 20 * $v_cli")"
	txn_rows "$d" "$c"
	rm -rf "$d"
}

# The transaction rows: transactions/s through libcutsnap
# (build/bench/libtxn: a put and an add in one record, durable before the
# reply) from one connection and from TXN_CLIENTS connections at once,
# against the disk's synced single writes/s: with group commit many
# transactions share an fsync, the same >= 10x floor as transfers. libtxn
# fails the bench unless the shared counter equals the commits it counted.
TXN_CLIENTS=${BENCH_TXN_CLIENTS:-128}
txn_rows () {
	local d=$1 c=$2 r one=() many=() w=() v_one v_many v_w
	start "$c"
	for r in $(seq 1 "$RUNS"); do
		w+=("$("$SYNCW" "$d/syncw.tmp" 1 2>>"$LOG")") || fail "syncw"
		one+=("$("$LIBTXN" "$d/run/a1.sock" "$LIB_SECONDS" 1 2>>"$LOG")") ||
		    fail "libtxn, 1 client"
		many+=("$("$LIBTXN" "$d/run/a1.sock" "$LIB_SECONDS" "$TXN_CLIENTS" 2>>"$LOG")") ||
		    fail "libtxn, $TXN_CLIENTS clients"
	done
	stop "$c"
	v_one=$(median "${one[@]}") v_many=$(median "${many[@]}") v_w=$(median "${w[@]}")
	cmd "build/bench/libtxn SOCKET $LIB_SECONDS CLIENTS   # CLIENTS 1 and $TXN_CLIENTS; against build/bench/syncw FILE 1 in the same runs"
	row "library transactions/s, one connection" "$v_one" \
	    "$v_w writes/s" "$(calc "$v_one / $v_w")" "-" "-"
	row "library transactions/s, $TXN_CLIENTS connections (group commit)" "$v_many" \
	    "$v_w writes/s" "$(calc "$v_many / $v_w")" ">= 10x" \
	    "$(verdict "$v_many >= 10 * $v_w")"
}

# --- 5. (defined here, run below) object storage: a repository in radosgw ---
# A Ceph radosgw on loopback (tests/s3/radosgw.sh, memstore), three agents
# with S3_MIB (512) MiB in a1: full snapshot, incremental after a 16 MiB
# change, verify and restore with no local state, into and from the bucket
# against the same with a directory, against "aws s3 cp --recursive" of
# the same data files each way when the aws CLI is installed, and against
# restic's backup, incremental backup, check --read-data and restore into
# the same radosgw. Then the local disk peak of each of them (disk_peak),
# and the bytes an incremental commit uploads after 1, 100 and 1000
# earlier snapshots (BENCH_S3_HISTORY; counted by tests/s3/faultproxy.py).
S3_MIB=${BENCH_S3_MIB:-512}
S3_HISTORY=${BENCH_S3_HISTORY:-1000}

# disk_peak DIR CMD...: run CMD with CUTSNAP_CACHE_DIR, RESTIC_CACHE_DIR
# and TMPDIR in the fresh directory DIR and print the peak of DIR's size
# in bytes beyond its empty size; the bench fails if CMD fails.
# The peak is sampled: a background loop runs "du -sb DIR" every 20 ms
# while CMD runs. A file that lives shorter than a sample period or
# between two samples is missed, so the figure is a lower bound of the
# true peak, not the peak itself. Agents started earlier keep their own
# TMPDIR: only the command's own disk use is counted.
disk_peak () {
	local dir=$1 pf=$1.peak s0 sampler rc peak sz
	shift
	rm -rf "$dir" "$pf" && mkdir -p "$dir/cache" "$dir/tmp" || fail "mkdir $dir"
	s0=$(du_b "$dir")
	echo 0 >"$pf"
	(
		peak=0
		while :; do
			sz=$(du -sb "$dir" 2>/dev/null | awk '{ print $1 }')
			if [ -n "$sz" ] && [ $((sz - s0)) -gt "$peak" ]; then
				peak=$((sz - s0))
				echo "$peak" >"$pf.tmp" && mv "$pf.tmp" "$pf"
			fi
			sleep 0.02
		done
	) &
	sampler=$!
	CUTSNAP_CACHE_DIR=$dir/cache RESTIC_CACHE_DIR=$dir/cache TMPDIR=$dir/tmp \
	    "$@" >>"$LOG" 2>&1
	rc=$?
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	[ $rc -eq 0 ] || fail "exit $rc: $*"
	# What the command left behind (its cache) counts too.
	peak=$(cat "$pf")
	sz=$(($(du_b "$dir") - s0))
	[ "$sz" -gt "$peak" ] && peak=$sz
	echo "$peak"
	rm -rf "$dir" "$pf"
}

# put_bytes LOG: "TOTAL META BLOBS", the bytes of the PUT bodies in the
# fault proxy's LOG: all, those under manifests/ and commits/, those under
# blobs/ (leases and other keys count in TOTAL only).
put_bytes () {
	python3 -c 'import json, sys
t = m = b = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["method"] != "PUT":
        continue
    n = r["bytes"]
    t += n
    if "/manifests/" in r["path"] or "/commits/" in r["path"]:
        m += n
    elif "/blobs/" in r["path"]:
        b += n
print(t, m, b)' "$1"
}

# s3_history: a small cluster (1 MiB in a1) snapshotted into a fresh
# prefix through the fault proxy, one "cutsnap put" between snapshots;
# the bytes a commit uploads after 1, 100 and S3_HISTORY earlier
# snapshots (1, 10, 100 when S3_HISTORY <= 100), as rows against the one
# after 1. Each step changes the same data: the put overwrites one key
# of a2, and a2 is compacted to its live state before the snapshot.
# Without that, a2's log and so its last chunk grow by a record a step,
# and the chunk, uploaded whole (an object store has no append), grows
# with the number of steps: that is the data file's growth, bounded by
# the chunk size, not the repository's history, which is what these rows
# measure. A commit uploads its delta and, one commit in 16, an index
# of the deltas before it (store/objchain.c), so each point is the mean
# over the HWIN commits from it, the cost a user sees over time.
HWIN=32
s3_history () {
	local h=$W/s3h c=$W/s3h/c.ini plog=$W/s3h/proxy.log n k pts=() got=() t m b base=""
	local -A sum_t sum_m sum_b
	make_cluster "$h" 3
	start "$c"
	fill "$c" a1 0 1
	python3 "$ROOT/tests/s3/faultproxy.py" "$AWS_ENDPOINT_URL" "$h/proxy.port" \
	    "$h/rules.json" "$plog" 2>>"$LOG" &
	S3_PROXY_PID=$!
	for k in $(seq 1 300); do [ -s "$h/proxy.port" ] && break; sleep 0.1; done
	[ -s "$h/proxy.port" ] || fail "the fault proxy did not start"
	if [ "$S3_HISTORY" -gt 100 ]; then
		pts=(1 100 "$S3_HISTORY")
	else
		pts=(1 10 100)
	fi
	for n in $(seq 0 $((${pts[-1]} + HWIN - 1))); do
		echo "v$n" | "$CS" put -c "$c" a2 tick - >>"$LOG" 2>&1 || fail "put tick"
		"$CS" compact -c "$c" a2 >>"$LOG" 2>&1 || fail "compact a2"
		: >"$plog"
		AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$h/proxy.port") \
		    "$CS" snapshot -c "$c" -r s3://bench/hist >>"$LOG" 2>&1 ||
		    fail "snapshot $((n + 1)) through the proxy"
		read -r t m b <<<"$(put_bytes "$plog")"
		for k in "${pts[@]}"; do
			[ "$n" -ge "$k" ] && [ "$n" -lt $((k + HWIN)) ] || continue
			sum_t[$k]=$(( ${sum_t[$k]:-0} + t ))
			sum_m[$k]=$(( ${sum_m[$k]:-0} + m ))
			sum_b[$k]=$(( ${sum_b[$k]:-0} + b ))
		done
	done
	for k in "${pts[@]}"; do
		got+=("$k $(( sum_t[$k] / HWIN )) $(( sum_m[$k] / HWIN )) $(( sum_b[$k] / HWIN ))")
	done
	kill "$S3_PROXY_PID" 2>/dev/null
	wait "$S3_PROXY_PID" 2>/dev/null
	S3_PROXY_PID=""
	stop "$c"
	cmd "cutsnap put -c CONF a2 tick -; cutsnap compact -c CONF a2; cutsnap snapshot -c CONF -r s3://BUCKET/PREFIX   # repeated, through tests/s3/faultproxy.py, PUT bodies summed"
	[ ${#got[@]} -eq ${#pts[@]} ] || fail "bytes per commit: ${#got[@]} of ${#pts[@]} points measured"
	for k in "${got[@]}"; do
		read -r n t m b <<<"$k"
		[ -n "$base" ] || base=$t
		row "s3 bytes per commit after $n snapshots (mean of $HWIN)" \
		    "$t (manifest+commit $m, blobs $b)" "$base (after 1)" \
		    "$(calc "$t / $base")" "flat (<= 1.1x)" "$(verdict "$t <= 1.1 * $base")"
	done
	rm -rf "$h"
}

s3_rows () {
	local d=$W/s3 c=$W/s3/c.ini env aws_bin v=() dv=() a=() i=() di=() vv=() dvv=() r
	local rs=() drs=() ad=() rb=() ri=() rv=() rr=() ps pi pv pr prb pri prv prr
	# Each full copy (cutsnap's, aws's, restic's; RUNS of each, and the
	# peak runs) stays in the bucket: room for 4 x (RUNS + 1) of them.
	RGW_MEMSTORE_BYTES=$(((4 * (RUNS + 1) * S3_MIB + 1024) * MIB)) bash "$ROOT/tests/s3/radosgw.sh" start "$W/rgw" >>"$LOG" 2>&1 ||
	    fail "radosgw did not start (see $W/rgw/log)"
	CONFS_RGW=$W/rgw
	env=$W/rgw/env
	# shellcheck disable=SC1090
	. "$env"
	export CUTSNAP_CACHE_DIR=$W/s3-cache RESTIC_CACHE_DIR=$W/restic-cache RESTIC_PASSWORD=x
	curl -s -o /dev/null -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" \
	    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	    -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
	    "$AWS_ENDPOINT_URL/bench" || fail "create bucket"
	make_cluster "$d" 3
	start "$c"
	fill "$c" a1 0 "$S3_MIB"
	aws_bin=$(command -v aws)
	for r in $(seq 1 "$RUNS"); do
		rm -rf "$CUTSNAP_CACHE_DIR"
		fresh "$c" "$d/repo"
		timed v "$CS" snapshot -c "$c" -r "s3://bench/full$r"
		timed dv "$CS" snapshot -c "$c" -r "$d/repo"
		relink "$d"
		if [ -n "$aws_bin" ]; then
			timed a "$aws_bin" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --quiet \
			    --recursive "$d/files/" "s3://bench/aws$r/"
		fi
		restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic$r" init >>"$LOG" 2>&1 ||
		    fail "restic init"
		timed rb restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic$r" backup "$d/files"
	done
	for r in $(seq 1 "$RUNS"); do
		change "$c" 16
		timed i "$CS" snapshot -c "$c" -r "s3://bench/full$RUNS"
		timed di "$CS" snapshot -c "$c" -r "$d/repo"
		relink "$d"
		timed ri restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic$RUNS" backup "$d/files"
	done
	# Reads with no local state: no cache, an empty target directory.
	for r in $(seq 1 "$RUNS"); do
		rm -rf "$CUTSNAP_CACHE_DIR"
		timed vv "$CS" verify -r "s3://bench/full$RUNS"
		timed dvv "$CS" verify -r "$d/repo"
		rm -rf "$RESTIC_CACHE_DIR"
		timed rv restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic$RUNS" check --read-data
		rm -rf "$CUTSNAP_CACHE_DIR" "$d/out" && sync
		timed rs "$CS" restore -r "s3://bench/full$RUNS" --target "$d/out"
		rm -rf "$d/out" && sync
		timed drs "$CS" restore -r "$d/repo" --target "$d/out"
		rm -rf "$d/out" && sync
		if [ -n "$aws_bin" ]; then
			timed ad "$aws_bin" --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --quiet \
			    --recursive "s3://bench/aws$RUNS/" "$d/out"
			rm -rf "$d/out" && sync
		fi
		rm -rf "$RESTIC_CACHE_DIR"
		timed rr restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic$RUNS" restore latest --target "$d/out"
		rm -rf "$d/out" && sync
	done
	# Local disk peaks: a full snapshot into a fresh prefix, an
	# incremental one after a 16 MiB change, the verify and restore of
	# it, each with no cache to start from; restic's backup, incremental
	# backup, check --read-data and restore of the same files the same way.
	fresh "$c" "$d/repo"
	ps=$(disk_peak "$d/local" "$CS" snapshot -c "$c" -r s3://bench/peak)
	relink "$d"
	restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic-peak" init >>"$LOG" 2>&1 ||
	    fail "restic init"
	prb=$(disk_peak "$d/local" restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic-peak" backup "$d/files")
	change "$c" 16
	pi=$(disk_peak "$d/local" "$CS" snapshot -c "$c" -r s3://bench/peak)
	relink "$d"
	pri=$(disk_peak "$d/local" restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic-peak" backup "$d/files")
	pv=$(disk_peak "$d/local" "$CS" verify -r s3://bench/peak)
	prv=$(disk_peak "$d/local" restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic-peak" check --read-data)
	pr=$(disk_peak "$d/local" "$CS" restore -r s3://bench/peak --target "$d/out")
	rm -rf "$d/out"
	prr=$(disk_peak "$d/local" restic -q -r "s3:$AWS_ENDPOINT_URL/bench/restic-peak" restore latest --target "$d/out")
	rm -rf "$d/out"
	stop "$c"
	cmd "cutsnap snapshot -c CONF -r s3://BUCKET/PREFIX   # radosgw on loopback, a fresh prefix and cache"
	cmd "cutsnap verify -r s3://BUCKET/PREFIX; cutsnap restore -r s3://BUCKET/PREFIX --target EMPTY_DIR   # no cache"
	cmd "aws --endpoint-url URL s3 cp --recursive DIR_OF_THE_DATA_FILES s3://BUCKET/PREFIX/   # and back: s3://BUCKET/PREFIX/ EMPTY_DIR"
	cmd "restic -r s3:URL/BUCKET/PREFIX backup DIR_OF_THE_DATA_FILES; restic -r s3:URL/BUCKET/PREFIX restore latest --target EMPTY_DIR"
	cmd "restic -r s3:URL/BUCKET/PREFIX check --read-data   # no cache"
	cmd "disk peak: CUTSNAP_CACHE_DIR, RESTIC_CACHE_DIR and TMPDIR in one directory, du -sb of it every 20 ms (a lower bound)"
	row "s3 full snapshot ms, $S3_MIB MiB, radosgw" "$(median "${v[@]}")" "$(median "${dv[@]}") (directory)" \
	    "$(calc "$(median "${v[@]}") / $(median "${dv[@]}")")" "-" "-"
	if [ -n "$aws_bin" ]; then
		row "s3 full snapshot ms vs aws s3 cp --recursive" "$(median "${v[@]}")" "$(median "${a[@]}") (aws s3 cp)" \
		    "$(calc "$(median "${v[@]}") / $(median "${a[@]}")")" "<= 1.0x" \
		    "$(verdict "$(median "${v[@]}") <= $(median "${a[@]}")")"
	else
		say "bench: aws CLI not installed: no aws s3 cp rows"
		row "s3 full snapshot ms vs aws s3 cp --recursive" "$(median "${v[@]}")" "n/a (aws CLI not installed)" \
		    "n/a" "<= 1.0x" "-"
	fi
	row "s3 full snapshot ms vs restic backup" "$(median "${v[@]}")" "$(median "${rb[@]}") (restic)" \
	    "$(calc "$(median "${v[@]}") / $(median "${rb[@]}")")" "-" "-"
	row "s3 incremental snapshot ms after 16 MiB change" "$(median "${i[@]}")" "$(median "${di[@]}") (directory)" \
	    "$(calc "$(median "${i[@]}") / $(median "${di[@]}")")" "-" "-"
	row "s3 incremental snapshot ms vs restic backup" "$(median "${i[@]}")" "$(median "${ri[@]}") (restic)" \
	    "$(calc "$(median "${i[@]}") / $(median "${ri[@]}")")" "-" "-"
	row "s3 verify ms, no local state" "$(median "${vv[@]}")" "$(median "${dvv[@]}") (directory)" \
	    "$(calc "$(median "${vv[@]}") / $(median "${dvv[@]}")")" "-" "-"
	row "s3 restore ms, no local state" "$(median "${rs[@]}")" "$(median "${drs[@]}") (directory)" \
	    "$(calc "$(median "${rs[@]}") / $(median "${drs[@]}")")" "-" "-"
	row "s3 verify ms vs restic check --read-data" "$(median "${vv[@]}")" "$(median "${rv[@]}") (restic)" \
	    "$(calc "$(median "${vv[@]}") / $(median "${rv[@]}")")" "-" "-"
	if [ -n "$aws_bin" ]; then
		row "s3 verify ms vs aws s3 cp --recursive (download)" "$(median "${vv[@]}")" "$(median "${ad[@]}") (aws s3 cp)" \
		    "$(calc "$(median "${vv[@]}") / $(median "${ad[@]}")")" "<= 1.0x" \
		    "$(verdict "$(median "${vv[@]}") <= $(median "${ad[@]}")")"
		row "s3 restore ms vs aws s3 cp --recursive (download)" "$(median "${rs[@]}")" "$(median "${ad[@]}") (aws s3 cp)" \
		    "$(calc "$(median "${rs[@]}") / $(median "${ad[@]}")")" "<= 1.0x" \
		    "$(verdict "$(median "${rs[@]}") <= $(median "${ad[@]}")")"
	else
		row "s3 verify ms vs aws s3 cp --recursive (download)" "$(median "${vv[@]}")" "n/a (aws CLI not installed)" \
		    "n/a" "<= 1.0x" "-"
		row "s3 restore ms vs aws s3 cp --recursive (download)" "$(median "${rs[@]}")" "n/a (aws CLI not installed)" \
		    "n/a" "<= 1.0x" "-"
	fi
	row "s3 restore ms vs restic restore" "$(median "${rs[@]}")" "$(median "${rr[@]}") (restic)" \
	    "$(calc "$(median "${rs[@]}") / $(median "${rr[@]}")")" "-" "-"
	# In KiB: restic's peaks are a few KiB, which MiB would show as 0.0.
	row "s3 full snapshot local disk peak KiB (sampled)" "$((ps / 1024))" "$((prb / 1024)) (restic backup)" \
	    "-" "<= 65536 KiB" "$(verdict "$ps <= 64 * $MIB")"
	row "s3 incremental snapshot local disk peak KiB (sampled)" "$((pi / 1024))" "$((pri / 1024)) (restic backup)" \
	    "-" "<= 65536 KiB" "$(verdict "$pi <= 64 * $MIB")"
	row "s3 verify local disk peak KiB (sampled)" "$((pv / 1024))" "$((prv / 1024)) (restic check)" "-" "<= 65536 KiB" \
	    "$(verdict "$pv <= 64 * $MIB")"
	row "s3 restore local disk peak KiB beyond the files (sampled)" "$((pr / 1024))" "$((prr / 1024)) (restic restore)" \
	    "-" "<= 65536 KiB" "$(verdict "$pr <= 64 * $MIB")"
	s3_history
	bash "$ROOT/tests/s3/radosgw.sh" stop "$W/rgw" >>"$LOG" 2>&1
	CONFS_RGW=""
	unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION CUTSNAP_CACHE_DIR RESTIC_PASSWORD \
	    RESTIC_CACHE_DIR
	rm -rf "$d" "$W/s3-cache" "$W/restic-cache"
}

# relink DIR: DIR/files holds hard links to DIR's data files (aws and
# restic read that directory: aws fails on the agents' sockets in run/),
# made again so that a data file an agent rewrote is the one read.
relink () {
	rm -rf "$1/files" && mkdir "$1/files" && ln "$1"/*.data "$1/files/" ||
	    fail "link the data files"
}

# Sourced for its helpers: stop here.
[ "${BENCH_LIB:-0}" = 1 ] && return 0

[ -x "$CS" ] && [ -x "$SYNCW" ] && [ -x "$PINGPONG" ] && [ -x "$SHAPAR" ] && [ -x "$KDFMS" ] &&
    [ -x "$DECPAR" ] && [ -x "$LIBGET" ] && [ -x "$LIBTXN" ] || {
	echo "bench: run 'make bench' (needs bin/cutsnap and build/bench/syncw, pingpong, shapar, kdfms, decpar, libget, libtxn)" >&2
	exit 2
}
for t in restic borg openssl; do
	command -v $t >/dev/null || {
		echo "bench: $t is missing; run 'make bench-deps'" >&2
		exit 2
	}
done

_base=${TMPDIR:-/tmp}
[ ${#_base} -gt 40 ] && _base=/tmp
W=${BENCH_DIR:-$(mktemp -d "$_base/csb.XXXXXX")}
mkdir -p "$W" || exit 2
W=$(cd "$W" && pwd)
CONFS=""
LOG=$W/bench.log
ROWS=$W/rows.md
CMDS=$W/cmds.md
: >"$ROWS"
: >"$CMDS"

cleanup () {
	local c
	tls_ns_down
	for c in $CONFS; do
		timeout 60 "$CS" stop -c "$c" >/dev/null 2>&1
	done
	[ -n "${S3_PROXY_PID:-}" ] && kill "$S3_PROXY_PID" 2>/dev/null
	[ -n "${CONFS_RGW:-}" ] && bash "$ROOT/tests/s3/radosgw.sh" stop "$CONFS_RGW" >/dev/null 2>&1
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "bench: kept $W" >&2
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

avail_kib=$(df -Pk "$W" | awk 'NR == 2 { print $4 }')
if [ "$avail_kib" -lt $((4 * 1024 * 1024)) ]; then
	echo "bench: only $((avail_kib / 1024)) MiB free in $W; need 4 GiB" >&2
	exit 2
fi

# --- machine ------------------------------------------------------------

machine () {
	local fs
	fs=$(df -PT "$W" | awk 'NR == 2 { print $1 " (" $2 ")" }')
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- commit: $(commit_line)"
	echo "- cpus (nproc): $(nproc); model: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "- memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "- scratch filesystem: $fs"
	echo "- kernel: $(uname -sr)"
	echo "- openssl: $(openssl version | cut -d' ' -f1-2); restic: $(restic version | cut -d' ' -f2); borg: $(borg --version | cut -d' ' -f2)"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
}

say "bench: scratch $W"
MACHINE=$(machine)
printf '%s\n' "$MACHINE" >&2
printf '%-46s %-14s %-22s %-8s %-20s %s\n' "measure" "value" "baseline" "ratio" "target" "verdict"
head -c $((1024 * MIB)) /dev/urandom >"$W/rand"

# results_head: the parts every results file has, up to its commands:
# the machine, the table of rows, and the "## Commands" heading.
results_head () {
	echo "## Machine"
	echo
	printf '%s\n' "$MACHINE"
	echo
	echo "## Results"
	echo
	echo "| measure | value | baseline | ratio | target | verdict |"
	echo "| --- | --- | --- | --- | --- | --- |"
	cat "$ROWS"
	echo
	echo "## Commands"
	echo
}

# CUTSNAP_BENCH_ONLY=s3: section 5 (object storage) alone, written to
# bench/RESULTS-s3.md with its own machine block (RESULTS.md, the whole
# bench's, is left as it is).
if [ "${CUTSNAP_BENCH_ONLY:-}" = s3 ]; then
	s3_rows
	{
		echo "# cutsnap benchmark results: object storage alone"
		echo
		echo "Written by \`CUTSNAP_BENCH_ONLY=s3 make bench\` (bench/run.sh, section 5"
		echo "alone). Each time is the median of $RUNS runs, wall-clock ms; ratios are"
		echo "value / baseline, measured in the same run against the same radosgw"
		echo "(memstore, on loopback). $S3_MIB MiB of random values in a1; the"
		echo "incremental rows follow a 16 MiB change. \"No local state\": no cache"
		echo "directory (cutsnap's and restic's removed before each run) and an"
		echo "empty target. Disk peaks: the cache and TMPDIR of the command, sampled"
		echo "every 20 ms (a lower bound), the restored files not counted. Bytes per"
		echo "commit: PUT bodies counted by tests/s3/faultproxy.py, a small cluster"
		echo "with one put between snapshots, the mean of $HWIN commits from each point."
		echo
		results_head
		cat "$CMDS"
		echo
		echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
	} >"$ROOT/bench/RESULTS-s3.md"
	say "bench: CUTSNAP_BENCH_ONLY=s3: wrote $ROOT/bench/RESULTS-s3.md"
	exit 0
fi

# --- 1. synced single writes/s and transfers/s ----------------------------

v=()
for r in $(seq 1 "$RUNS"); do
	w=$("$SYNCW" "$W/syncw.tmp" 3) || fail "syncw"
	v+=("$w")
done
SYNCW_PS=$(median "${v[@]}")
cmd "build/bench/syncw FILE 3      # 512-byte write + fdatasync, 3 s"
row "disk: synced single writes/s" "$SYNCW_PS" "-" "-" "-" "-"

make_cluster "$W/tp" 3
start "$W/tp/c.ini"
# load_tps OUT K [ARGS]: one checked run with K clients (summary in OUT,
# and in OUT.cpu "AGENTS_US LOAD_US": the CPU microseconds per transfer of
# the three agents together and of the load client, as bench/tls.sh
# measures them).
load_tps () {
	local out=$1 k=$2 a0 a1 cpu rc TIMEFORMAT='%U %S'
	shift 2
	a0=$(agents_ticks "$W/tp/c.ini" 3)
	cpu=$({ time "$CS" load --json -c "$W/tp/c.ini" -s 5 --clients "$k" "$@" \
	    >"$out" 2>>"$LOG"; } 2>&1)
	rc=$?
	a1=$(agents_ticks "$W/tp/c.ini" 3)
	load_verify "$out" "$rc" -c "$W/tp/c.ini" -s 5 --clients "$k" "$@"
	awk -v n="$(field transfers "$out")" -v a="$((a1 - a0))" \
	    -v hz="$(getconf CLK_TCK)" -v cpu="$cpu" \
	    'BEGIN { split(cpu, u, " "); if (n == 0) { print "n/a n/a"; exit }
	        printf "%.1f %.1f\n", a * 1e6 / hz / n, (u[1] + u[2]) * 1e6 / n }' \
	    >"$out.cpu"
}
# cpu_medians PREFIX: "AGENTS_US LOAD_US", the medians over the runs
# r = 1..RUNS of load_tps's PREFIX$r.cpu.
cpu_medians () {
	local r ca cl v=() f=()
	for r in $(seq 1 "$RUNS"); do
		read -r ca cl <"$1$r.cpu"
		v+=("$ca"); f+=("$cl")
	done
	echo "$(median "${v[@]}") $(median "${f[@]}")"
}
# Closed-loop clients: with K clients at most K transfers are in flight,
# so transfers/s is bounded by K / round trip until the agents saturate.
# Like pgbench users, sweep K and judge the capacity at the best K; every
# K's row stays in the table.
PEAK=0; PEAK_K=32
for k in 32 64 128; do
	v=(); f=()
	for r in $(seq 1 "$RUNS"); do
		load_tps "$W/tp.$k.$r" "$k"
		v+=("$(field transfers_per_s "$W/tp.$k.$r")")
		f+=("$(field fsyncs_per_transfer "$W/tp.$k.$r")")
	done
	t=$(median "${v[@]}")
	row "transfers/s, $k clients (fsyncs/transfer $(median "${f[@]}"))" "$t" \
	    "$SYNCW_PS writes/s" "$(calc "$t / $SYNCW_PS")" "-" "-"
	if awk "BEGIN { exit !($t > $PEAK) }"; then PEAK=$t; PEAK_K=$k; fi
done
TPS=$PEAK
cmd "cutsnap load -c CONF -s 5 --clients K         # 3 agents, full mesh; K = 32, 64, 128"
# The CPU floor: a transfer is at least one request/reply between a
# client and an agent over a Unix socket, so transfers/s cannot pass the
# round trips/s of a trivial ping-pong of 3 single-threaded epoll servers
# with the same K clients on the same cores (no work, no fsync).
v=()
for r in $(seq 1 "$RUNS"); do
	w=$("$PINGPONG" "$W" 3 "$PEAK_K" 3) || fail "pingpong"
	v+=("$w")
done
PP=$(median "${v[@]}")
cmd "build/bench/pingpong DIR 3 K 3     # Unix-socket ping-pong, 3 s, K clients, 3 servers"
row "transfers/s floor: Unix-socket ping-pong, $PEAK_K clients" "$PP" "$SYNCW_PS writes/s" \
    "$(calc "$PP / $SYNCW_PS")" "-" "-"
# The CPU floor: what the cores give at the CPU a transfer took in the
# best K's runs (agents + load, medians), were they busy with nothing
# else. A transfer costs each side a socket write and read per request
# and reply, and the agents a share of an fdatasync, whose CPU on this
# VM (virtio notifications, the inode's write) is a third of theirs
# (docs/INTERNALS.md, "Where an agent's CPU goes per transfer").
read -r CPU_A CPU_L <<<"$(cpu_medians "$W/tp.$PEAK_K.")"
CPU_FLOOR=$(calc "$NCPU * 1000000 / ($CPU_A + $CPU_L)")
row "CPU us/transfer, $PEAK_K clients: agents $CPU_A + load $CPU_L" \
    "$CPU_FLOOR" "$SYNCW_PS writes/s" "$(calc "$CPU_FLOOR / $SYNCW_PS")" "-" "-"
if awk "BEGIN { exit !($CPU_FLOOR < $PP) }"; then
	FLOOR=$CPU_FLOOR
	FLOOR_WHY="$NCPU cores at the CPU per transfer measured, agents $CPU_A + load $CPU_L us; ping-pong $(calc "$PP / $SYNCW_PS")x"
else
	FLOOR=$PP
	FLOOR_WHY="round trips/s of a Unix-socket ping-pong; CPU $(calc "$CPU_FLOOR / $SYNCW_PS")x"
fi
row "transfers/s, best of the above ($PEAK_K clients)" "$TPS" "$SYNCW_PS writes/s" \
    "$(calc "$TPS / $SYNCW_PS")" ">= 30x" \
    "$(floored "$(verdict "$TPS >= 30 * $SYNCW_PS")" "$(calc "$FLOOR / $SYNCW_PS")" ">=" 30 "$FLOOR_WHY")"
# Snapshots every 500 ms against no snapshots, at the best K, in pairs
# of runs: each pair restarts the agents onto a fresh repository, and its
# two runs swap order from one pair to the next, so that the disk's drift
# over the minutes of the bench falls on both sides alike (in one run
# the restore rows' baseline took 1092 ms at its fastest and 2013 ms at
# its median, minutes apart). The verdict takes the median of the pairs'
# ratios; the value and baseline columns are each side's median, and the
# row shows the ratio to the sweep's best too (the largest of three
# medians, which one fast run lifts).
# Steady state: an untimed snapshot just before each timed run with
# snapshots, so that, as with snapshots taken every 500 ms all along,
# the timed run copies only what it adds (the runs before it left
# hundreds of MiB of history, whose first full copy would otherwise land
# inside the first of the 5 s).
# Each run must complete snapshots (load fails the bench on a failed one):
# the row says how many each run completed.
steady_snapshot () {
	"$CS" snapshot -q -c "$W/tp/c.ini" -r "$W/tp/repo" >>"$LOG" 2>&1 ||
	    fail "untimed snapshot into $W/tp/repo"
}
v=(); vb=(); vr=(); ns=()
for r in $(seq 1 "$RUNS"); do
	fresh "$W/tp/c.ini" "$W/tp/repo"
	if [ $((r % 2)) -eq 1 ]; then
		load_tps "$W/tpb.$r" "$PEAK_K"
		steady_snapshot
		load_tps "$W/tps.$r" "$PEAK_K" --snapshot-every 500 -r "$W/tp/repo"
	else
		steady_snapshot
		load_tps "$W/tps.$r" "$PEAK_K" --snapshot-every 500 -r "$W/tp/repo"
		load_tps "$W/tpb.$r" "$PEAK_K"
	fi
	n=$(field snapshots "$W/tps.$r")
	[ "$n" -gt 0 ] || fail "load with a snapshot every 500 ms completed no snapshot"
	v+=("$(field transfers_per_s "$W/tps.$r")")
	vb+=("$(field transfers_per_s "$W/tpb.$r")")
	vr+=("$(calc "${v[-1]} / ${vb[-1]}")")
	ns+=("$n")
done
TPS_S=$(median "${v[@]}")
TPS_B=$(median "${vb[@]}")
TPS_R=$(median "${vr[@]}")
NSNAP=$(IFS=/; echo "${ns[*]}")
# Why it may miss: the snapshots' work (capture, copying what the
# transfers added, the manifest's commit) runs on the transfers' cores,
# in the agents and in load (which takes them). No floor follows from it
# (neither run keeps both cores busy), so on a FAIL the row shows the
# CPU per transfer the snapshots add (medians of the paired runs).
read -r CPU_SA CPU_SL <<<"$(cpu_medians "$W/tps.")"
read -r CPU_BA CPU_BL <<<"$(cpu_medians "$W/tpb.")"
cmd "cutsnap snapshot -c CONF -r REPO; cutsnap load -c CONF -s 5 --clients K --snapshot-every 500 -r REPO   # K of the best row"
cmd "cutsnap load -c CONF -s 5 --clients K   # the paired run without snapshots, before or after"
row "CPU us/transfer, snapshot every 500 ms: agents $CPU_SA + load $CPU_SL" \
    "$(calc "$CPU_SA + $CPU_SL")" "$(calc "$CPU_BA + $CPU_BL") (no snapshots, paired runs)" \
    "$(calc "($CPU_SA + $CPU_SL) / ($CPU_BA + $CPU_BL)")" "-" "-"
row "transfers/s, $PEAK_K clients, snapshot every 500 ms ($NSNAP snapshots completed)" "$TPS_S" \
    "$TPS_B (no snapshots, paired runs; sweep's best $TPS)" \
    "$TPS_R ($(calc "$TPS_S / $TPS") of the best)" ">= 0.9x" \
    "$(why "$(verdict "$TPS_R >= 0.9")" \
        "the snapshots add $(calc "$CPU_SA + $CPU_SL - $CPU_BA - $CPU_BL") us of CPU per transfer: agents $CPU_BA -> $CPU_SA, load $CPU_BL -> $CPU_SL; each reads, hashes and writes again every file's last chunk, compressing only its new bytes")"
stop "$W/tp/c.ini"
rm -rf "$W/tp"

# --- 2. a growing data file: capture pause, snapshots, verify, others ---------

make_cluster "$W/big" 3
BC=$W/big/c.ini
start "$BC"
for a in a1 a2 a3; do
	"$CS" put -c "$BC" $a bal 1000000 >>"$LOG" 2>&1 || fail "put $a bal"
done
cmd "dd if=RANDOM bs=1M skip=I count=1 | cutsnap put -c CONF a1 kI -   # 1 MiB values"

# capture SIZE-LABEL: slowest transfer during a snapshot vs the median
# outside one, a fresh repository each run (the snapshot is a full one).
capture () {
	local r v=() out
	for r in $(seq 1 "$RUNS"); do
		out=$W/cap.$1.$r
		fresh "$BC" "$W/big/repo"
		load_checked "$out" -c "$BC" -s 6 --clients 4 --snapshot-every 2000 \
		    -r "$W/big/repo"
		[ "$(field snapshots "$out")" -gt 0 ] ||
		    fail "capture $1 run $r completed no snapshot"
		# No transfer overlapped a snapshot: no measurement.
		if [ "$(field during_snapshot_requests "$out")" = 0 ]; then
			v+=(n/a)
		else
			v+=("$(calc "$(field during_snapshot_max_ms "$out") / $(field outside_snapshot_p50_ms "$out")")")
		fi
		say "capture $1 run $r: $(cat "$out")"
	done
	CAP=$(median "${v[@]}")
	CAP_MAX=$(field during_snapshot_max_ms "$out")
	CAP_P50=$(field outside_snapshot_p50_ms "$out")
	CAP_OMAX=$(field outside_snapshot_max_ms "$out")
	CAP_OP99=$(field outside_snapshot_p99_ms "$out")
	CAP_DP99=$(field during_snapshot_p99_ms "$out")
}
# cap_detail: the baseline column of a capture row (the last run's figures).
cap_detail () {
	echo "p50 ${CAP_P50} ms; p99 outside ${CAP_OP99} / during ${CAP_DP99}; max outside ${CAP_OMAX} / during ${CAP_MAX}"
}
cmd "cutsnap load -c CONF -s 6 --clients 4 --snapshot-every 2000 -r FRESH_REPO  # capture pause"

fill "$BC" a1 0 1
capture "1MiB"
row "capture pause, a1 = $(mib "$(size_of "$W/big/a1.data")") MiB" "${CAP}x" \
    "$(cap_detail)" "$CAP" "-" "-"
fill "$BC" a1 1 256
capture "256MiB"
row "capture pause, a1 = $(mib "$(size_of "$W/big/a1.data")") MiB" "${CAP}x" \
    "$(cap_detail)" "$CAP" "-" "-"
fill "$BC" a1 256 512
capture "512MiB"
# Its row, which has a target, is written after the same load without
# snapshots is measured (after the rows whose data that load would change).
CAP512=$CAP
CAP512_LABEL="capture pause, a1 = $(mib "$(size_of "$W/big/a1.data")") MiB"
CAP512_DETAIL=$(cap_detail)
# Full snapshot vs cp + fsync + sha256 of the same files, one after the other.
DATA="$W/big/a1.data $W/big/a2.data $W/big/a3.data"
baseline_copy () {
	local f
	for f in $DATA; do
		cp "$f" "$W/cp/" && sync "$W/cp/$(basename "$f")" &&
		    openssl dgst -sha256 "$W/cp/$(basename "$f")" || return 1
	done
}
# The floor, measured beside each run: the snapshot must write and fsync
# the same bytes (fw) and hash them (fh, sha256 on every core); with both
# overlapped perfectly it takes the longer of the two.
v=(); b=(); fw=(); fh=(); z=()
for r in $(seq 1 "$RUNS5"); do
	rm -rf "$W/cp" && mkdir "$W/cp" && sync
	timed b baseline_copy
	rm -rf "$W/cp" && mkdir "$W/cp" && sync
	# shellcheck disable=SC2086
	timed fw write_fsync "$W/cp" $DATA
	# shellcheck disable=SC2086
	fh+=("$(hash_floor $DATA)")
	rm -rf "$W/cp"
	fresh "$BC" "$W/big/repo"
	timed v "$CS" snapshot -c "$BC" -r "$W/big/repo"
	# The same snapshot again: nothing changed, nothing to copy. What
	# it takes (start-up, the agents' capture, the lock, the manifest's
	# commit) is the part of a full snapshot that no copy shortens; the
	# newest snapshot, which verify and restore take below, records the
	# same files.
	timed z "$CS" snapshot -c "$BC" -r "$W/big/repo"
done
rm -rf "$W/cp"
FULL=$(median "${v[@]}")
cmd "cutsnap snapshot -c CONF -r FRESH_REPO"
cmd "cp FILE DIR/ && sync DIR/FILE && openssl dgst -sha256 DIR/FILE   # per data file"
# shellcheck disable=SC2086
DATA_B=$(stat -c %s $DATA | awk '{ s += $1 } END { print s }')
FW=$(fastest "${fw[@]}")
FH=$(fastest "${fh[@]}")
if [ "$FW" -ge "$FH" ]; then SFL=$FW SFL_WHAT="write+fsync"; else SFL=$FH SFL_WHAT="sha256 on $NCPU cores"; fi
cmd "dd if=FILE of=DIR/FILE bs=4M oflag=direct conv=fsync   # per data file: the write floor"
cmd "build/bench/shapar NPROC FILES   # sha256 of the files in NPROC ranges at once: the hashing floor"
row "snapshot floor: write+fsync / sha256 on $NCPU cores" "$(fm fw) / $(fm fh)" \
    "$(fm b) cp+fsync+sha256" "$(calc "$FW / $(fastest "${b[@]}")") / $(calc "$FH / $(fastest "${b[@]}")")" "-" "-"
row "full snapshot ms, $(mib "$DATA_B") MiB, fastest of $RUNS5" "$(fm v)" \
    "$(fm b) cp+fsync+sha256" "$(ratio_fm v b)" "<= 0.3x" \
    "$(floored "$(verdict "$(fastest "${v[@]}") <= 0.3 * $(fastest "${b[@]}")")" \
    "$(calc "$SFL / $(fastest "${b[@]}")")" "<=" 0.3 "$SFL_WHAT; a snapshot with nothing to copy took $(fastest "${z[@]}") ms; the copy writes on two threads per core, which leaves the disk idle while all of them hash, as more would lengthen the agents' waits during a snapshot: docs/perf/profiles.md, performance VII")"
cmd "cutsnap snapshot -c CONF -r REPO   # again at once: nothing to copy"
row "snapshot with nothing to copy ms, after the full one" "$(fm z)" "$(fm v) full" "$(ratio_fm z v)" "-" "-"
FULL_REPO=$(du_b "$W/big/repo")

# Verify vs openssl dgst -sha256 over the repository's blob files, one
# stream. Verify must hash every byte once: on this machine's cores it
# cannot beat openssl run on every core at once (the blobs split in
# nproc streams), the floor row.
v=(); b=(); fl=()
BLOBS=$W/big/blobs.list
find "$W/big/repo/blobs" -type f >"$BLOBS"
for r in $(seq 1 "$RUNS5"); do
	timed v "$CS" verify -r "$W/big/repo"
	timed b sh -c "xargs -r openssl dgst -sha256 <'$BLOBS'"
	timed fl sh -c "xargs -r -P '$NCPU' -n \$(( \$(wc -l <'$BLOBS') / $NCPU + 1 )) openssl dgst -sha256 <'$BLOBS'"
done
VER=$(median "${v[@]}")
cmd "cutsnap verify -r REPO"
cmd "find REPO/blobs -type f | xargs openssl dgst -sha256"
cmd "find REPO/blobs -type f | xargs -P NPROC -n COUNT/NPROC openssl dgst -sha256   # floor"
row "verify ms, fastest of $RUNS5" "$(fm v)" "$(fm b) openssl dgst" \
    "$(ratio_fm v b)" "<= 0.4x" \
    "$(floored "$(verdict "$(fastest "${v[@]}") <= 0.4 * $(fastest "${b[@]}")")" \
    "$(calc "$(fastest "${fl[@]}") / $(fastest "${b[@]}")")" "<=" 0.4 "openssl dgst on all $NCPU cores")"
row "verify floor: openssl dgst on all $NCPU cores" "$(fm fl)" "$(fm b) openssl dgst" \
    "$(ratio_fm fl b)" "-" "-"

# Restore vs the naive way: openssl dgst of the blobs, then cp of the
# files and an fsync of each. Restore hashes every byte once (each chunk
# against its row; the chunks tile the file, under the snapshot's digest)
# and writes it: the floor row is the verify floor's hashing, on every
# core, or the write+fsync floor when that is longer.
RC=$W/big/r/c.ini
mkdir -p "$W/big/r"
sed "s#^data = #data = $W/big/r/#" "$BC" >"$RC"
baseline_restore () {
	local f
	xargs -r openssl dgst -sha256 <"$BLOBS" >/dev/null || return 1
	for f in $DATA; do
		cp "$f" "$W/cp/" && sync "$W/cp/$(basename "$f")" || return 1
	done
}
v=(); b=(); fl=()
for r in $(seq 1 "$RUNS5"); do
	rm -rf "$W/cp" "$W/big/r/"*.data && mkdir "$W/cp" && sync
	timed b baseline_restore
	rm -rf "$W/cp" && sync
	timed v "$CS" restore -r "$W/big/repo" -c "$RC"
	timed fl sh -c "xargs -r -P '$NCPU' -n \$(( \$(wc -l <'$BLOBS') / $NCPU + 1 )) openssl dgst -sha256 <'$BLOBS'"
done
rm -rf "$W/cp" "$W/big/r"
cmd "cutsnap restore -r REPO -c CONF2      # CONF2: the same agents, other data paths"
cmd "openssl dgst -sha256 BLOBS; cp FILE DIR/ && sync DIR/FILE   # per data file"
# Restore also writes and fsyncs every byte: its floor is the longer of
# that (the snapshot rows' write floor) and the hashing.
RFL=$(fastest "${fl[@]}") RFL_WHAT="sha256 on $NCPU cores"
[ "$FW" -gt "$RFL" ] && RFL=$FW RFL_WHAT="write+fsync"
row "restore ms, $(mib "$DATA_B") MiB, fastest of $RUNS5" "$(fm v)" \
    "$(fm b) sha256+cp+fsync" "$(ratio_fm v b)" "<= 0.6x" \
    "$(floored "$(verdict "$(fastest "${v[@]}") <= 0.6 * $(fastest "${b[@]}")")" \
    "$(calc "$RFL / $(fastest "${b[@]}")")" "<=" 0.6 "$RFL_WHAT")"
row "restore floor: the blobs hashed on all $NCPU cores" "$(fm fl)" \
    "$(fm b) sha256+cp+fsync" "$(ratio_fm fl b)" "-" "-"

# restic and borg: full backup of the same files.
export RESTIC_PASSWORD=x RESTIC_CACHE_DIR=$W/restic-cache BORG_BASE_DIR=$W/borg-base
RR=$W/restic-repo
BR=$W/borg-repo
restic init -q -r "$RR" >>"$LOG" 2>&1 || fail "restic init"
borg init --encryption=none "$BR" >>"$LOG" 2>&1 || fail "borg init"
cmd "RESTIC_PASSWORD=x restic init -r REPO; restic backup -q -r REPO FILES"
cmd "borg init --encryption=none REPO; borg create REPO::NAME FILES"
# shellcheck disable=SC2086 # DATA is a list of paths
rf=(); timed rf restic backup -q -r "$RR" $DATA; R_FULL=${rf[0]}
# shellcheck disable=SC2086
bf=(); timed bf borg create "$BR::full" $DATA; B_FULL=${bf[0]}
R_SIZE=$(du_b "$RR")
B_SIZE=$(du_b "$BR")
row "restic full backup ms (repo MiB)" "$R_FULL ($(mib "$R_SIZE"))" "cutsnap $FULL ($(mib "$FULL_REPO"))" \
    "$(calc "$FULL / $R_FULL")" "-" "-"
row "borg full backup ms (repo MiB)" "$B_FULL ($(mib "$B_SIZE"))" "cutsnap $FULL ($(mib "$FULL_REPO"))" \
    "$(calc "$FULL / $B_FULL")" "-" "-"

# Incremental: a 16 MiB change (16 values of 1 MiB rewritten), then a
# second snapshot into the same repository; restic and borg back up the
# same changed files. One change per run.
v=(); g=(); rv=(); bv=(); rg=(); bg=()
for r in $(seq 1 "$RUNS"); do
	change "$BC" 16
	s0=$(du_b "$W/big/repo")
	timed v "$CS" snapshot -c "$BC" -r "$W/big/repo"
	g+=("$(( $(du_b "$W/big/repo") - s0 ))")
	s0=$(du_b "$RR")
	# shellcheck disable=SC2086
	timed rv restic backup -q -r "$RR" $DATA
	rg+=("$(( $(du_b "$RR") - s0 ))")
	s0=$(du_b "$BR")
	# shellcheck disable=SC2086
	timed bv borg create "$BR::incr$r" $DATA
	bg+=("$(( $(du_b "$BR") - s0 ))")
done
INC=$(median "${v[@]}")
GROW=$(median "${g[@]}")
cmd "16 x (dd if=/dev/urandom-slice bs=1M count=1 | cutsnap put -c CONF a1 kI -); cutsnap snapshot -c CONF -r REPO"
row "incremental snapshot ms after 16 MiB change" "$INC" "$FULL (full)" \
    "$(calc "$INC / $FULL")" "<= 0.30x" "$(verdict "$INC <= 0.3 * $FULL")"
row "repository growth MiB after 16 MiB change" "$(mib "$GROW")" "16 MiB changed" \
    "$(calc "$GROW / 16777216")" "<= 32 MiB" "$(verdict "$GROW <= 32 * 1048576")"
row "restic incremental ms (growth MiB)" "$(median "${rv[@]}") ($(mib "$(median "${rg[@]}")"))" \
    "cutsnap $INC ($(mib "$GROW"))" "$(calc "$INC / $(median "${rv[@]}")")" "-" "-"
row "borg incremental ms (growth MiB)" "$(median "${bv[@]}") ($(mib "$(median "${bg[@]}")"))" \
    "cutsnap $INC ($(mib "$GROW"))" "$(calc "$INC / $(median "${bv[@]}")")" "-" "-"
rm -rf "$RR" "$BR" "$W/restic-cache" "$W/borg-base"

# --- 2b. encrypted repositories against restic and borg -----------------------
# The same files into an encrypted cutsnap repository (init --encrypt,
# zstd), a restic repository (always encrypted, its default compression)
# and a borg repository (--encryption=repokey, zstd), for random and for
# compressible data: full backup, incremental after a 16 MiB change,
# verify reading every byte, restore. RUNS runs of each but the
# incremental (one), one side after the other within a run; every side
# derives its key from the password
# on each command (cutsnap and restic: scrypt; borg: PBKDF2).

# The data: 256 MiB in a1 (and two small files). Every command of each
# side pays fixed costs whatever the size (one key derivation: 0.15-0.35
# s of scrypt here for cutsnap and restic, as the machine goes; start-up; a
# handful of fsyncs): at 16 MiB they were most of cutsnap's time (1239 ms
# against restic's 878), which measures start-up, not backup. From 256
# MiB on, the fixed part is under a third of the full snapshot and the
# rows compare the work on the data; larger sizes would only lengthen the
# bench (restic and borg take seconds per 256 MiB). The floor in the
# verdict shows how much of the row the fixed key derivation is.
ENC_MIB=${BENCH_ENC_MIB:-256}
export CUTSNAP_PASSWORD_FILE=$W/enc.pw BORG_PASSPHRASE=x BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
printf 'x\n' >"$CUTSNAP_PASSWORD_FILE"
cmd "cutsnap init -r REPO --encrypt (CUTSNAP_PASSWORD_FILE); cutsnap snapshot -c CONF -r REPO"
cmd "cutsnap verify -r REPO; cutsnap restore -r REPO -c CONF2   # CONF2: other data paths"
cmd "borg init --encryption=repokey REPO; borg create --compression zstd REPO::NAME FILES"
cmd "restic check --read-data; borg check --verify-data; restic restore latest --target DIR; borg extract REPO::NAME"
cmd "restic cat config   # restic opening its repository: its key derivation, shown beside its verify time"
cmd "build/bench/decpar NPROC FILES   # 4 MiB pieces compressed as cutsnap's chunks (untimed), then decompressed and hashed on NPROC threads"

# text_fill CONF FROM TO: keys tFROM..tTO-1, 1 MiB of lines of text each.
text_fill () {
	local c=$1 i
	for i in $(seq "$2" $(($3 - 1))); do
		awk -v k="$i" 'BEGIN { for (n = 0; n < 24000; n++)
		    printf "account %07d branch %03d balance %09d\n", n, (n * 7 + k) % 997,
		    (n * 7919 + k) % 1000000000 }' | head -c $MIB |
		    "$CS" put -c "$c" a1 "t$i" - >>"$LOG" 2>&1 || return 1
	done
}

# warm DIR: read every file under DIR once (into the page cache).
warm () { find "$1" -type f -exec cat {} + >/dev/null; }

# kdf_ms REPO: the time of one key derivation with the scrypt parameters
# REPO's key records, as cutsnap makes it (build/bench/kdfms: the
# product's aead_scrypt with V in huge pages, as cutsnap's main arranges;
# `openssl kdf` would fault V in 4 KiB pages, 2.5x slower): the fixed cost
# of every command that opens an encrypted repository with a password,
# whatever the data size.
kdf_ms () {
	local n r p
	"$CS" key list -r "$1" --json >"$W/kdf.json" 2>>"$LOG" || return 1
	n=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["n"])' "$W/kdf.json") &&
	r=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["r"])' "$W/kdf.json") &&
	p=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["p"])' "$W/kdf.json") ||
	    return 1
	"$KDFMS" "$n" "$r" "$p" 2>>"$LOG"
}

# enc_floor MS RESTIC BORG TR TB: the floor of an encrypted row (MS, the
# least time the row's work can take here) as "R / B", its ratios to
# restic's and borg's times, and, after a ":", whether it meets the
# targets TR (restic) and TB (borg): "yes" or "no".
enc_floor () {
	echo "$(calc "$1 / $2") / $(calc "$1 / $3"):$(awk "BEGIN { print ($1 <= $4 * $2 && $1 <= $5 * $3) ? \"yes\" : \"no\" }")"
}
# enc_verdict VERDICT FLOOR-FROM-enc_floor WHAT: the row's verdict, with
# the floor on FAIL (as floored does).
enc_verdict () {
	local reach=""
	case "$1" in PASS) echo PASS; return ;; esac
	[ "${2#*:}" = yes ] || reach="; target out of reach here"
	echo "FAIL (floor ${2%%:*}x: $3$reach)"
}

# enc_rows LABEL DIR: the rows for the cluster in DIR (started, filled).
# Each row is the median of RUNS runs of each side: with one run each, a
# single slow run of either side (the VM's disk and CPU swing within
# minutes) decided the verdict. Every full run starts from fresh repositories (and
# restarted agents: cutsnap's fresh repository numbers from 1 again); the
# last run's repositories take one incremental run of each side, then
# the verify and restore runs.
enc_rows () {
	local l=$1 d=$2 c=$2/c.ini files rr br cr bytes r
	local cf=() ci=() cv=() cs=() rf=() ri=() rv=() rs=() bf=() bi=() bv=() bs=()
	local kd=() fwv=() fhv=() fdv=() rk=() kdf fw fh fd
	files="$d/a1.data $d/a2.data $d/a3.data"
	cr=$d/repo rr=$d/restic br=$d/borg
	# shellcheck disable=SC2086
	bytes=$(stat -c %s $files | awk '{ s += $1 } END { print s }')
	for r in $(seq 1 "$RUNS"); do
		[ "$r" -eq 1 ] || fresh "$c" "$cr"
		rm -rf "$rr" "$br" && sync
		"$CS" init -r "$cr" --encrypt >>"$LOG" 2>&1 || fail "cutsnap init $cr"
		restic init -q -r "$rr" >>"$LOG" 2>&1 || fail "restic init $rr"
		borg init --encryption=repokey "$br" >>"$LOG" 2>&1 || fail "borg init $br"
		# The floors: one key derivation, plus the longer of writing
		# and fsyncing the files' bytes and hashing them on every core
		# (a full snapshot); verify's, below.
		kdf=$(kdf_ms "$cr") || fail "key derivation of $cr"
		kd+=("$kdf")
		mkdir -p "$d/cp"
		# shellcheck disable=SC2086
		timed fwv write_fsync "$d/cp" $files
		rm -rf "$d/cp"
		# shellcheck disable=SC2086
		fhv+=("$(hash_floor $files)")
		timed cf "$CS" snapshot -c "$c" -r "$cr"
		# shellcheck disable=SC2086
		timed rf restic backup -q -r "$rr" $files
		# shellcheck disable=SC2086
		timed bf borg create --compression zstd "$br::full" $files
	done
	kdf=$(median "${kd[@]}") fw=$(median "${fwv[@]}") fh=$(median "${fhv[@]}")
	[ "$fw" -gt "$fh" ] || fw=$fh
	row "enc $l full ms, $(mib "$bytes") MiB (repo MiB)" "$(median "${cf[@]}") ($(mib "$(du_b "$cr")"))" \
	    "restic $(median "${rf[@]}") ($(mib "$(du_b "$rr")")); borg $(median "${bf[@]}") ($(mib "$(du_b "$br")"))" \
	    "$(enc_ratios cf rf bf)" "<= 0.3x restic, 0.5x borg" \
	    "$(enc_verdict "$(enc_meets cf rf bf)" \
	    "$(enc_floor $((kdf + fw)) "$(median "${rf[@]}")" "$(median "${bf[@]}")" 0.3 0.5)" \
	    "key derivation $kdf ms + $fw ms write+fsync or sha256")"
	# One change, one incremental run of each side: every further change
	# would add 16 MiB of random values to the data that the verify and
	# restore rows then read (and to the text rows' compressible data).
	change "$c" 16
	timed ci "$CS" snapshot -c "$c" -r "$cr"
	# shellcheck disable=SC2086
	timed ri restic backup -q -r "$rr" $files
	# shellcheck disable=SC2086
	timed bi borg create --compression zstd "$br::incr" $files
	row "enc $l incremental ms after 16 MiB change" "$(median "${ci[@]}")" \
	    "restic $(median "${ri[@]}"); borg $(median "${bi[@]}")" \
	    "$(enc_ratios ci ri bi)" "-" "-"
	# Each side's repository read once first: the page cache warm for
	# all three (cutsnap's snapshot writes its chunks with O_DIRECT, past
	# the cache; restic and borg write through it).
	if ! { warm "$cr" && warm "$rr" && warm "$br"; }; then
		fail "reading the repositories"
	fi
	# Verify's floor: one key derivation plus decompressing and hashing
	# the files' plain bytes, as chunks, on every core (every chunk is
	# opened, decompressed and its plain bytes hashed; the repository's
	# bytes would understate a compressed repository's work, 20 MiB for
	# the 256 MiB of text). Reading and decrypting are not counted.
	for r in $(seq 1 "$RUNS"); do
		# shellcheck disable=SC2086
		fdv+=("$(decode_floor $files)")
		timed cv "$CS" verify -r "$cr"
		timed rv restic check --read-data -q -r "$rr"
		# What of restic's time is opening its key: its own scrypt
		# derivation (parameters calibrated by restic init), which
		# every restic command pays first, as cutsnap pays its own.
		timed rk restic cat config -q -r "$rr"
		timed bv borg check --verify-data "$br"
	done
	fd=$(median "${fdv[@]}")
	# shellcheck disable=SC2086
	bytes=$(stat -c %s $files | awk '{ s += $1 } END { print s }')
	row "enc $l verify ms (all bytes read)" "$(median "${cv[@]}")" \
	    "restic $(median "${rv[@]}") (opening its key alone $(median "${rk[@]}")); borg $(median "${bv[@]}")" \
	    "$(enc_ratios cv rv bv)" "<= 0.3x restic, 0.5x borg" \
	    "$(enc_verdict "$(enc_meets cv rv bv)" \
	    "$(enc_floor $((kdf + fd)) "$(median "${rv[@]}")" "$(median "${bv[@]}")" 0.3 0.5)" \
	    "key derivation $kdf ms + $fd ms decompressing and hashing the files' $(mib "$bytes") MiB of plain bytes on $NCPU cores")"
	mkdir -p "$d/r"
	sed "s#^data = #data = $d/r/#" "$c" >"$d/r/c.ini"
	for r in $(seq 1 "$RUNS"); do
		rm -rf "$d/r/"*.data "$d/rr" "$d/br" && mkdir -p "$d/rr" "$d/br" && sync
		timed cs "$CS" restore -r "$cr" -c "$d/r/c.ini"
		timed rs restic restore latest -q -r "$rr" --target "$d/rr"
		timed bs sh -c "cd '$d/br' && borg extract '$br::incr'"
	done
	row "enc $l restore ms" "$(median "${cs[@]}")" "restic $(median "${rs[@]}"); borg $(median "${bs[@]}")" \
	    "$(enc_ratios cs rs bs)" "-" "-"
	rm -rf "$cr" "$rr" "$br" "$d/r" "$d/rr" "$d/br"
}
# enc_ratios C R B: the medians of the arrays named C / R and C / B.
enc_ratios () {
	local -n _c=$1 _r=$2 _b=$3
	echo "$(calc "$(median "${_c[@]}") / $(median "${_r[@]}")") / $(calc "$(median "${_c[@]}") / $(median "${_b[@]}")")"
}
# enc_meets C R B: PASS when C's median is within 0.3x R's and 0.5x B's.
enc_meets () {
	local -n _c=$1 _r=$2 _b=$3
	verdict "$(median "${_c[@]}") <= 0.3 * $(median "${_r[@]}") && $(median "${_c[@]}") <= 0.5 * $(median "${_b[@]}")"
}

for l in random text; do
	make_cluster "$W/enc-$l" 3
	start "$W/enc-$l/c.ini" || continue
	if [ $l = random ]; then
		fill "$W/enc-$l/c.ini" a1 0 "$ENC_MIB"
	else
		text_fill "$W/enc-$l/c.ini" 0 "$ENC_MIB"
	fi
	enc_rows $l "$W/enc-$l"
	stop "$W/enc-$l/c.ini"
	rm -rf "$W/enc-$l"
done
unset CUTSNAP_PASSWORD_FILE BORG_PASSPHRASE
rm -rf "$W/restic-cache" "$W/borg-base"

# The capture load with no snapshot at all: how far the slowest request
# of 6 s lies from the median on this machine anyway (the floor of the
# capture rows). After the rows it would change (its transfers add
# records that verify replays).
v=()
for r in $(seq 1 "$RUNS"); do
	out=$W/floor.$r
	load_checked "$out" -c "$BC" -s 6 --clients 4
	v+=("$(calc "$(field max_ms "$out") / $(field p50_ms "$out")")")
done
CAP_FLOOR=$(median "${v[@]}")
cmd "cutsnap load -c CONF -s 6 --clients 4        # no snapshots: slowest / median"
row "no snapshot at all: slowest / median (4 clients)" "${CAP_FLOOR}x" \
    "p50 $(field p50_ms "$out") ms; p99 $(field p99_ms "$out"); max $(field max_ms "$out")" \
    "$CAP_FLOOR" "-" "-"
# The capture row with its target, beside the same load's ratio with no
# snapshot at all. Not a floor in the strict sense (a snapshot's window
# is shorter than the 6 s whose slowest transfer that ratio takes), but
# what this machine's scheduling does to the slowest transfer anyway.
row "$CAP512_LABEL (after the no-snapshot row)" "${CAP512}x" "$CAP512_DETAIL" "$CAP512" "<= 5x" \
    "$(why "$(verdict "$CAP512 <= 5")" "with no snapshot at all the same load's slowest / median is ${CAP_FLOOR}x")"

# 1 GiB: capture pause and the agent's peak memory.
fill "$BC" a1 512 1024
capture "1GiB"
row "capture pause, a1 = $(mib "$(size_of "$W/big/a1.data")") MiB" "${CAP}x" \
    "$(cap_detail)" "$CAP" "-" "-"
fresh "$BC" "$W/big/repo"
pid=$(agent_pid "$BC" a1)
H_OPEN=$(vmhwm_kib "$pid")
for i in 0 100 500 1000; do "$CS" get -c "$BC" a1 "k$i" >/dev/null 2>>"$LOG"; done
"$CS" snapshot -c "$BC" -r "$W/big/repo" >>"$LOG" 2>&1 || fail "snapshot of the 1 GiB file"
H_ALL=$(vmhwm_kib "$pid")
cmd "VmHWM of /proc/PID/status: after restart on the 1 GiB file; after gets and a snapshot"
row "agent peak RSS MiB, 1 GiB file (open / +gets+snap)" "$(calc "$H_OPEN / 1024") / $(calc "$H_ALL / 1024")" \
    "$(mib "$(size_of "$W/big/a1.data")") MiB file" "-" "< 64 MiB" "$(verdict "$H_ALL < 65536")"
stop "$BC"
rm -rf "$W/big"

# --- 2c. agent memory with 16 MiB values ------------------------------------
# A 1 GiB data file written as 64 values of 16 MiB (the largest a put
# takes). Peak RSS (VmHWM) of the agent after the puts, after a restart
# (recovery), and while it serves transfers, gets of four values and a
# snapshot of the whole file. The floor: the agent at rest plus a few
# bounded buffers (a put's value is spooled to a temporary file as it
# arrives and copied into the data file in 256 KiB pieces; a get's is sent
# from the data file as the socket drains; the recovery reads a 1 MiB
# window): about 4 MiB, whatever the value's size.

make_cluster "$W/mem" 2
MC=$W/mem/c.ini
start "$MC"
for a in a1 a2; do
	"$CS" put -c "$MC" $a bal 1000000 >>"$LOG" 2>&1 || fail "put $a bal"
done
pid=$(agent_pid "$MC" a1)
M_REST=$(vmhwm_kib "$pid")
for i in $(seq 0 63); do
	dd if="$W/rand" bs=16M skip=$((i % 64)) count=1 status=none |
	    "$CS" put -c "$MC" a1 "m$i" - >>"$LOG" 2>&1 || fail "put m$i"
done
M_PUTS=$(vmhwm_kib "$pid")
stop "$MC"
start "$MC"
pid=$(agent_pid "$MC" a1)
M_OPEN=$(vmhwm_kib "$pid")
"$CS" load --json -c "$MC" -s 6 --clients 4 >"$W/mem.load" 2>>"$LOG" &
lpid=$!
for i in 0 21 42 63; do
	"$CS" get -c "$MC" a1 "m$i" >/dev/null 2>>"$LOG" || fail "get m$i"
done
"$CS" snapshot -c "$MC" -r "$W/mem/repo" >>"$LOG" 2>&1 || fail "snapshot of the 16 MiB values"
wait "$lpid" || fail "load during the 16 MiB gets and snapshot: $(cat "$W/mem.load")"
[ "$(field conserved "$W/mem.load")" = true ] || fail "load during the 16 MiB gets and snapshot did not conserve"
M_ALL=$(vmhwm_kib "$pid")
stop "$MC"
rm -rf "$W/mem"
cmd "64 x cutsnap put -c CONF a1 mI - (16 MiB each); restart; cutsnap load -s 6 --clients 4 & 4 x cutsnap get a1 mI; cutsnap snapshot"
row "agent peak RSS MiB, 1 GiB of 16 MiB values (puts / open / +load+gets+snap)" \
    "$(calc "$M_PUTS / 1024") / $(calc "$M_OPEN / 1024") / $(calc "$M_ALL / 1024")" \
    "floor $(calc "$M_REST / 1024 + 4") (at rest $(calc "$M_REST / 1024") + bounded buffers, no 16 MiB frame)" "-" "<= 16 MiB" \
    "$(verdict "$M_PUTS <= 16384 && $M_OPEN <= 16384 && $M_ALL <= 16384")"

# --- 2d. a paced snapshot (pace_rows, above) ---------------------------------

pace_rows

# --- 3. snapshot time against the number of agents ---------------------------

for n in 2 4 8 32; do
	make_cluster "$W/n$n" "$n"
	start "$W/n$n/c.ini"
	load_checked "$W/n$n/load" -c "$W/n$n/c.ini" -s 1 --clients 2 --initial 1000
	v=()
	for r in $(seq 1 "$RUNS"); do
		fresh "$W/n$n/c.ini" "$W/n$n/repo"
		timed v "$CS" snapshot -c "$W/n$n/c.ini" -r "$W/n$n/repo"
	done
	eval "NS_$n=$(median "${v[@]}")"
	stop "$W/n$n/c.ini"
	rm -rf "$W/n$n"
done
cmd "cutsnap snapshot -c CONF -r FRESH_REPO    # N agents, full mesh, small files"
row "snapshot ms, 2 agents (2 channels)" "$NS_2" "-" "-" "-" "-"
row "snapshot ms, 4 agents (12 channels)" "$NS_4" "-" "-" "-" "-"
row "snapshot ms, 8 agents (56 channels)" "$NS_8" "$NS_4 (4 agents)" "$(calc "$NS_8 / $NS_4")" "-" "-"
row "snapshot ms, 32 agents (992 channels)" "$NS_32" "$NS_4 (4 agents)" \
    "$(calc "$NS_32 / $NS_4")" "<= 8x" "$(verdict "$NS_32 <= 8 * $NS_4")"

# --- 4. TCP + mutual TLS (loopback) against Unix sockets ---------------------
# The same three-agent cluster with every agent on 127.0.0.1:PORT against
# one on Unix sockets, one run of each in turn: transfers/s at the K of the
# best Unix row with the CPU time per transfer of both sides, and a 4-agent
# snapshot (bench/tls.sh; "bash bench/tls.sh" runs it alone).

tls_rows

# --- 4b. a recorded file streamed over TLS against read from the disk -------
# Three agents with an addr on 127.0.0.1, a1's file filled to about 256 MiB:
# a full snapshot into a fresh repository with the chunks streamed by the
# agents over TLS (the default), and the same with shared_data = yes (the
# coordinator reads the files from the disk); then an incremental one
# after 4 MiB of changes, streamed.

make_tls_cluster "$W/st" 3
sed 's/^tls_dir = tls$/tls_dir = tls\nshared_data = yes/' "$W/st/c.ini" \
    >"$W/st/shared.ini"
if start "$W/st/c.ini"; then
	fill "$W/st/c.ini" a1 0 256
	vs=(); vd=(); vi=()
	for r in $(seq 1 "$RUNS"); do
		fresh "$W/st/c.ini" "$W/st/repo"
		vs+=("$(ms_of "$CS" snapshot -c "$W/st/c.ini" -r "$W/st/repo")")
		fresh "$W/st/c.ini" "$W/st/repo"
		vd+=("$(ms_of "$CS" snapshot -c "$W/st/shared.ini" -r "$W/st/repo")")
		change "$W/st/c.ini" 4
		vi+=("$(ms_of "$CS" snapshot -c "$W/st/c.ini" -r "$W/st/repo")")
	done
	ST_FULL=$(median "${vs[@]}"); ST_DISK=$(median "${vd[@]}")
	ST_INC=$(median "${vi[@]}")
	stop "$W/st/c.ini"
else
	ST_FULL=error; ST_DISK=error; ST_INC=error
fi
rm -rf "$W/st"
cmd "cutsnap snapshot -c CONF -r FRESH_REPO   # 3 agents with addr on 127.0.0.1, a1 ~256 MiB: streamed over TLS"
cmd "cutsnap snapshot -c CONF_SHARED -r FRESH_REPO   # the same with [cluster] shared_data = yes: read from the disk"
row "full snapshot ms, a1 ~256 MiB streamed over TLS" "$ST_FULL" \
    "$ST_DISK (shared_data = yes, from the disk)" "$(calc "$ST_FULL / $ST_DISK")" "-" "-"
row "incremental snapshot ms after 4 MiB changed, streamed over TLS" "$ST_INC" \
    "$ST_FULL (full, streamed)" "$(calc "$ST_INC / $ST_FULL")" "-" "-"

# --- 5. object storage (s3_rows, above) ----------------------------------------

s3_rows

# --- 6. compaction and concurrent snapshots (bench/compact_concurrent.sh) -----

compact_rows
concurrent_rows

# --- 7. libcutsnap -----------------------------------------------------------

lib_rows

# --- RESULTS.md ---------------------------------------------------------------

{
	echo "# cutsnap benchmark results"
	echo
	echo "Written by \`make bench\` (bench/run.sh). Each value is the median of"
	echo "$RUNS runs; restic's and borg's unencrypted full backups are one run each. Times are"
	echo "wall-clock milliseconds; ratios are value / baseline, measured in the same"
	echo "run. The page cache is warm for every side (nothing drops caches)."
	echo "Transfers/s: K closed-loop clients (one transfer in flight each, so at"
	echo "most K in flight) for K = 32, 64, 128; the group-commit target is judged"
	echo "at the best K. The runs with a snapshot every 500 ms use that K and are"
	echo "judged against as many runs without snapshots at the same K, taken in"
	echo "pairs with them (a fresh repository per pair, the order swapped from one"
	echo "pair to the next); its ratio is the median of the pairs' ratios."
	echo "Capture pause = slowest transfer overlapping a snapshot / median of the"
	echo "transfers outside one (4 clients, a fresh repository, so a full snapshot);"
	echo "its baseline column shows the last run's median outside any snapshot, and"
	echo "the 99th percentile and the slowest transfer outside and during one, in ms."
	echo
	results_head
	echo "Data: three agents a1..a3 (full mesh); a1's file grows by 1 MiB random"
	echo "values (put from slices of a 1 GiB random file) to about 1, 256, 512 and"
	echo "1024 MiB. restic runs with RESTIC_PASSWORD=x (restic always encrypts),"
	echo "borg with --encryption=none, both with their default compression."
	echo "The \"enc\" rows: three agents, a1 filled with $ENC_MIB MiB of random values or"
	echo "of lines of text, into an encrypted cutsnap repository (init --encrypt,"
	echo "zstd), restic (encrypted, default compression) and borg (repokey, zstd);"
	echo "medians of $RUNS runs each side (the incremental: one run), ratios cutsnap / restic and cutsnap / borg; before the"
	echo "verify rows every side's repository is read once (page cache warm for all)."
	echo
	echo "Floors: a row that misses its target shows, in its verdict, the best the"
	echo "hardware allows for its work, measured in the same run, as a ratio to the"
	echo "row's baseline (\"target out of reach here\" when the floor itself misses"
	echo "the target): snapshot, the longer of write+fsync of the same bytes (dd,"
	echo "direct) and their sha256 on every core (build/bench/shapar); verify, openssl"
	echo "on every core; restore, the longer of write+fsync and the hashing on"
	echo "every core; transfers/s, the lower of a Unix-socket ping-pong's round trips/s"
	echo "with the same clients (build/bench/pingpong) and what the cores give at the"
	echo "CPU a transfer took at the best K (agents + load); encrypted rows, one scrypt key derivation"
	echo "as cutsnap makes it (build/bench/kdfms, the repository's parameters) plus"
	echo "that writing or hashing (verify: decompressing, as cutsnap's chunks"
	echo "(build/bench/decpar), and hashing the files' plain bytes on every core). The row with a"
	echo "snapshot every 500 ms has no floor (neither of its runs keeps both cores"
	echo "busy): on a FAIL it shows the CPU per transfer the snapshots add."
	echo
	cat "$CMDS"
	echo
	echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
} >"$RESULTS"
say "bench: wrote $RESULTS"

#!/usr/bin/env bash
# I/O faults: every write, fsync, rename, mkdir and creating open of a whole
# `cutsnap snapshot` and `cutsnap restore` run fails in turn, with EIO and
# with ENOSPC (the faultfs LD_PRELOAD shim, SQLite's own I/O included).
# Each run ends with one error line and a non-zero exit, or succeeds; no
# snapshot is complete unless it verifies, earlier snapshots stay intact,
# and restore leaves every data file untouched or wholly restored.
# Every operation of every restore fails in turn (about 140 restores):
# more than the default 150 s on a loaded machine.
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

FAULTFS=${FAULTFS:-$_lib_dir/../../build/faultfs.so}
if [ ! -f "$FAULTFS" ]; then
	echo "Bail out! no fault shim at $FAULTFS (run make test, or set FAULTFS)"
	exit 1
fi
OPS="write fsync rename mkdir create"

# faulty OP N ERRNO ARGS...: cutsnap ARGS with the N-th OP failing; stdout
# in $OUT, stderr in $ERR, status in $RC. OP "none" counts into $CNT.
CNT=$TEST_DIR/.counts
faulty () {
	local op=$1 n=$2 en=$3
	shift 3
	rm -f "$CNT"
	# Preloaded through env, so that only cutsnap (not timeout) counts.
	timeout -k 5 "${CS_TIMEOUT:-30}" env FAULTFS_OP="$op" FAULTFS_N="$n" \
	    FAULTFS_ERRNO="$en" FAULTFS_COUNT="$CNT" LD_PRELOAD="$FAULTFS" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
	    ${VG:-} "$CUTSNAP" "$@" >"$OUT" 2>"$ERR"
	RC=$?
	[ "$op" != none ] || cp "$CNT" "$CNT.none" 2>/dev/null
}

# count OP: how many times the last "faulty none" run did OP. Every
# faulty run rewrites $CNT, so a "none" run keeps its counts in $CNT.none
# too, for the loops that fail each operation in turn.
count () { awk -v op="$1" '$1 == op { print $2 }' "$CNT.none"; }

# The failed command said one line "cutsnap: CMD: ..." and did not crash.
clean_failure () {
	case $RC in
	1 | 2) ;;
	*) say "exit $RC (expected 0, 1 or 2)"; show_out; return 1 ;;
	esac
	err_is_one_line && err_matches "^cutsnap: $1: "
}

test_expect_success 'setup: three agents, a message in flight, snapshot 1' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=50 C=0 &&
	snapshot_in_flight 10 && expect_eq "$SNAP_ID" 1 "first id" &&
	expect_eq "$(msg_count 1)" 1 "messages in flight" &&
	expect_ok verify -r "$REPO" 1 &&
	cp "$REPO/manifest.db" "$TEST_DIR/.snap1.db"
'

# Every snapshot listed complete verifies; none is left running.
KNOWN_OK=" 1 "
repo_sound () {
	local id
	expect_ok ls -r "$REPO" --json || return 1
	if ! json_check "not any(s[\"status\"] == \"running\" for s in d)"; then
		say "a snapshot is listed as running after its coordinator exited:"
		cat "$OUT" >&2
		return 1
	fi
	for id in $(sql "select id from snapshots where status = 'complete'"); do
		case $KNOWN_OK in *" $id "*) continue ;; esac
		expect_ok verify -r "$REPO" "$id" || {
			say "snapshot $id is listed complete but does not verify"
			return 1
		}
		KNOWN_OK="$KNOWN_OK$id "
	done
	expect_ok verify -r "$REPO" 1 || { say "snapshot 1 was damaged"; return 1; }
}

# snapshot_faults ERRNO: fail each operation of a snapshot run in turn.
snapshot_faults () {
	local en=$1 op n total runs=0 ok=0
	# Count on a run like the faulty ones: the files changed, so the
	# blobs are new (written, fsynced, renamed, their directory made).
	cs add -c "$CONF" C n 1 >/dev/null &&
	faulty none 0 EIO snapshot -c "$CONF" -r "$REPO" || return 1
	[ "$RC" = 0 ] || { say "counting run failed"; show_out; return 1; }
	repo_sound || return 1
	for op in $OPS; do
		total=$(count "$op")
		say "snapshot: $op x $total"
		[ "$op" = mkdir ] || [ "$total" -gt 0 ] ||
		    { say "no $op counted"; return 1; }
		n=1
		while [ "$n" -le "$total" ]; do
			cs add -c "$CONF" C n 1 >/dev/null || return 1
			faulty "$op" "$n" "$en" snapshot -c "$CONF" -r "$REPO"
			runs=$((runs + 1))
			if [ "$RC" = 0 ]; then
				ok=$((ok + 1))
			else
				clean_failure snapshot ||
				    { say "$op #$n ($en)"; return 1; }
			fi
			repo_sound || { say "after $op #$n ($en)"; return 1; }
			n=$((n + 1))
		done
	done
	say "$runs faulty snapshot runs, $ok of them still succeeded"
	expect_ok status -c "$CONF"
}

test_expect_success 'snapshot: every write/fsync/rename/mkdir/create failing with EIO' '
	snapshot_faults EIO
'

test_expect_success 'snapshot: every write/fsync/rename/mkdir/create failing with ENOSPC' '
	snapshot_faults ENOSPC
'

test_expect_success 'the cluster still conserves money and snapshots normally' '
	wait_for 10 total_is 150 &&
	take_snapshot &&
	expect_ok verify -r "$REPO" "$SNAP_ID"
'

# nodirect MODE ARGS...: cutsnap ARGS on a filesystem without O_DIRECT
# (FAULTFS_NODIRECT=MODE, see faultfs.c); stdout in $OUT, status in $RC.
nodirect () {
	local mode=$1
	shift
	timeout -k 5 "${CS_TIMEOUT:-30}" env FAULTFS_NODIRECT="$mode" \
	    LD_PRELOAD="$FAULTFS" \
	    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
	    "$CUTSNAP" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

test_expect_success 'O_DIRECT refused at open or at the first write: the chunk copy falls back to buffered writes' '
	for mode in open write; do
		expect_ok put -c "$CONF" A "nodirect_$mode" 1 &&
		n0=$(find "$REPO/blobs" -type f | wc -l) &&
		nodirect "$mode" snapshot -c "$CONF" -r "$REPO" &&
		expect_eq "$RC" 0 "snapshot exit with O_DIRECT refused at $mode" &&
		id=$(_parse_id "$OUT") && [ -n "$id" ] &&
		[ "$(find "$REPO/blobs" -type f | wc -l)" -gt "$n0" ] &&
		expect_ok verify -r "$REPO" "$id" || { show_out; return 1; }
	done
'

# Restore snapshot 1 over files that hold another state ("before").
test_expect_success 'setup: the files before and after a clean restore of snapshot 1' '
	expect_ok transfer -c "$CONF" A:bal C:bal 7 &&
	wait_bal C 7 &&
	stop_cluster &&
	for n in A B C; do cp "$n.data" "$n.before"; done &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	for n in A B C; do cp "$n.data" "$n.after"; done &&
	expect_eq "$(dump_total bal)" 150 "restored total" &&
	expect_eq "$(dump_val B.after bal)" 60 "B with the replayed 10" &&
	! cmp -s A.before A.after
'

put_before () {
	local n
	for n in A B C; do cp "$n.before" "$n.data" || return 1; done
}

# Each data file is either what it was or what a clean restore makes.
files_whole () {
	local n
	for n in A B C; do
		cmp -s "$n.data" "$n.before" || cmp -s "$n.data" "$n.after" || {
			say "$n.data is neither untouched nor wholly restored"
			return 1
		}
	done
	if ls ./*.tmp.* >/dev/null 2>&1; then
		say "temporary files left behind:"; ls ./*.tmp.* >&2
		return 1
	fi
}

files_restored () {
	local n
	for n in A B C; do
		cmp -s "$n.data" "$n.after" ||
		    { say "$n.data is not the restored file"; return 1; }
	done
}

restore_faults () {
	local en=$1 op n total runs=0 ok=0
	put_before &&
	faulty none 0 EIO restore -r "$REPO" 1 -c "$CONF" || return 1
	[ "$RC" = 0 ] || { say "counting run failed"; show_out; return 1; }
	files_restored || return 1
	for op in $OPS; do
		total=$(count "$op")
		say "restore: $op x $total"
		[ "$op" = mkdir ] || [ "$total" -gt 0 ] ||
		    { say "no $op counted"; return 1; }
		n=1
		while [ "$n" -le "$total" ]; do
			put_before || return 1
			faulty "$op" "$n" "$en" restore -r "$REPO" 1 -c "$CONF"
			runs=$((runs + 1))
			if [ "$RC" = 0 ]; then
				ok=$((ok + 1))
				files_restored || { say "$op #$n"; return 1; }
			else
				clean_failure restore &&
				files_whole || { say "$op #$n ($en)"; return 1; }
			fi
			# Running it again finishes the job, exactly once.
			expect_ok restore -r "$REPO" 1 -c "$CONF" &&
			files_restored || { say "rerun after $op #$n"; return 1; }
			n=$((n + 1))
		done
	done
	say "$runs faulty restore runs, $ok of them still succeeded"
	expect_ok verify -r "$REPO" 1
}

test_expect_success 'restore: every write/fsync/rename/mkdir/create failing with EIO' '
	restore_faults EIO
'

test_expect_success 'restore: every write/fsync/rename/mkdir/create failing with ENOSPC' '
	restore_faults ENOSPC
'

# Leaks on the error paths: a subset under valgrind (definite leaks and
# memory errors fail the run with status 99).
# Not on a sanitizer build (make asan): valgrind cannot run those, and
# ASan's own leak checker already covers every run above there.
test_expect_success VALGRIND,!ASAN 'no leaks on the failing paths of restore (valgrind, every fsync and rename)' '
	VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" &&
	CS_TIMEOUT=120 &&
	for op in fsync rename; do
		put_before &&
		VG= faulty none 0 EIO restore -r "$REPO" 1 -c "$CONF" &&
		total=$(count "$op") &&
		{ [ "${total:-0}" -gt 0 ] || { say "no $op counted"; false; }; } &&
		n=1 &&
		while [ "$n" -le "$total" ]; do
			put_before &&
			faulty "$op" "$n" EIO restore -r "$REPO" 1 -c "$CONF" &&
			{ [ "$RC" = 0 ] || clean_failure restore; } ||
			    { say "$op #$n under valgrind"; return 1; }
			n=$((n + 1))
		done || return 1
	done &&
	VG= &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	files_restored
'
test_expect_success VALGRIND,!ASAN 'no leaks on the failing paths of snapshot (valgrind, every fsync)' '
	start_cluster &&
	VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite" &&
	CS_TIMEOUT=120 &&
	cs add -c "$CONF" C n 1 >/dev/null &&
	VG= faulty none 0 EIO snapshot -c "$CONF" -r "$REPO" &&
	total=$(count fsync) &&
	{ [ "${total:-0}" -gt 0 ] || { say "no fsync counted"; false; }; } &&
	n=1 &&
	while [ "$n" -le "$total" ]; do
		cs add -c "$CONF" C n 1 >/dev/null &&
		faulty fsync "$n" EIO snapshot -c "$CONF" -r "$REPO" &&
		{ [ "$RC" = 0 ] || clean_failure snapshot; } &&
		repo_sound || { say "fsync #$n under valgrind"; return 1; }
		n=$((n + 1))
	done
'

test_done

#!/bin/bash
# Read-only repositories (issue 9 part 4): ls, show, verify and restore
# only read. On a repository made read-only with chmod -R a-w (which does
# not stop root, so the permission bits are taken as the owner's intent)
# and on a read-only bind mount (which stops everyone), each of them works
# and leaves every file of the repository byte for byte as it was; a stale
# running snapshot is shown as such, not rewritten; unmerged WAL content is
# read; a schema that needs an upgrade is refused in one line (exit 2); the
# writing commands refuse a read-only repository.
. "$(dirname "$0")/lib.sh"

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
FIRST='' GOOD='' STALE='' LIVE=''

# repo_state: every entry of REPO (type, mode, path) and every file's
# SHA-256; STATE_N counts the files hashed.
repo_state () {
	(cd "$REPO" && find . -printf '%y %m %p\n' | LC_ALL=C sort &&
	    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
save_state () { repo_state >"$TEST_DIR/.state.before"; }
state_unchanged () {
	local n
	repo_state >"$TEST_DIR/.state.after" || return 1
	n=$(grep -c '^[0-9a-f]\{64\} ' "$TEST_DIR/.state.before")
	[ "$n" -ge 5 ] || { say "only $n files hashed"; return 1; }
	diff "$TEST_DIR/.state.before" "$TEST_DIR/.state.after" >&2 && return 0
	say "the repository changed"
	return 1
}

# The reading commands, each of which must exit 0 ($1: restore's config).
READERS='ls|ls --json|show|show --json|show --sum bal|verify|verify --json'
run_readers () {
	# shellcheck disable=SC2034
	local IFS='|' c n=0
	for c in $READERS; do
		IFS=' '
		# shellcheck disable=SC2086
		"$@" $c -r "$REPO" >"$OUT" 2>"$ERR" || {
			say "$c: exit $?"; show_out; return 1; }
		n=$((n + 1))
		IFS='|'
	done
	IFS=' '
	"$@" restore -r "$REPO" "$GOOD" -c "$CONF" >"$OUT" 2>"$ERR" || {
		say "restore: exit $?"; show_out; return 1; }
	expect_eq "$n" 7 "reading commands run"
}
direct () { timeout -k 5 30 "$CUTSNAP" "$@"; }

# ro CMD...: CMD in a private mount namespace in which REPO is a
# read-only bind mount of itself.
ro () {
	unshare -m sh -c 'mount --bind "$1" "$1" &&
	    mount -o remount,bind,ro "$1" && shift && exec "$@"' \
	    sh "$REPO" "$@"
}
ro_cs () { ro timeout -k 5 30 "$CUTSNAP" "$@"; }

test_expect_success 'setup: A, B; two snapshots, one with 10 in flight' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot && FIRST=$SNAP_ID &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator B --timeout 30 &&
	wait_recorded A &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait && GOOD=$SNAP_ID &&
	expect_eq "$(msg_count "$GOOD")" 1 "messages in flight"
'

as_nobody () {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
	    timeout -k 5 30 "$CUTSNAP" "$@"
}
test_expect_success NOBODY 'a user who cannot write the repository lists it while a snapshot commits' '
	chmod 755 "$TEST_DIR" "$REPO" && chmod 644 "$REPO/manifest.db" &&
	export CUTSNAP_FAULT=coord-copy-delay:12000 &&
	snapshot_bg --timeout 45 &&
	unset CUTSNAP_FAULT &&
	wait_for 15 snapshot_is_running &&
	LIVE=$(sql "select id from snapshots where status = '\''running'\''") &&
	[ -e "$REPO/manifest.db-wal" ] &&
	as_nobody ls -r "$REPO" --json >"$OUT" &&
	json_check "[(s[\"status\"], s[\"stale\"]) for s in d if s[\"id\"] == $LIVE] == [(\"running\", False)]" &&
	snapshot_wait && expect_eq "$SNAP_ID" "$LIVE" "snapshot id" &&
	as_nobody ls -r "$REPO" --json >"$OUT" &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $LIVE] == [\"complete\"]" &&
	chmod 700 "$TEST_DIR" "$REPO"
'

test_expect_success 'setup: a snapshot whose coordinator was killed stays running' '
	export CUTSNAP_FAULT=coord-copy-delay:20000 &&
	snapshot_bg --timeout 60 &&
	unset CUTSNAP_FAULT &&
	wait_for 15 snapshot_is_running &&
	wait_for 15 agent_phase_is B reported &&
	kill -KILL "$(cutsnap_pid "$SNAP_PID")" &&
	{ wait "$SNAP_PID" 2>/dev/null; true; } &&
	STALE=$(sql "select id from snapshots where status = '\''running'\''") &&
	[ -n "$STALE" ] &&
	stop_cluster
'

test_expect_success 'writable repository: readers write no lock file, change no byte of it' '
	save_state &&
	run_readers direct &&
	state_unchanged &&
	expect_eq "$(snap_status "$STALE")" running "stale snapshot status"
'

test_expect_success 'a stale running snapshot is shown as such by ls, and left as it is' '
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d if s[\"id\"] == $STALE] == [\"running\"]" &&
	json_check "[s[\"stale\"] for s in d if s[\"id\"] == $STALE] == [True]" &&
	json_check "\"no coordinator\" in [s for s in d if s[\"id\"] == $STALE][0][\"reason\"]" &&
	json_check "[s[\"stale\"] for s in d if s[\"id\"] == $GOOD] == [False]" &&
	expect_ok ls -r "$REPO" &&
	grep -q "no coordinator" "$OUT" &&
	expect_eq "$(snap_status "$STALE")" running "status after ls"
'

test_expect_success 'chmod -R a-w (as root): every reader works, no byte changes' '
	chmod -R a-w "$REPO" &&
	save_state &&
	run_readers direct &&
	state_unchanged &&
	grep -q "^restored snapshot $GOOD" "$OUT" &&
	expect_eq "$(dump_val A.data bal)" 90 "restored A" &&
	expect_eq "$(snap_status "$STALE")" running "stale snapshot status"
'

test_expect_success 'chmod -R a-w: snapshot, forget and prune refuse to write it (exit 2)' '
	save_state &&
	expect_error 2 prune -r "$REPO" && err_matches "read-only" &&
	expect_error 2 forget -r "$REPO" --keep-last 1 && err_matches "read-only" &&
	expect_error 2 snapshot -c "$CONF" -r "$REPO" && err_matches "read-only" &&
	state_unchanged &&
	chmod -R u+w "$REPO"
'

test_expect_success 'chmod -R a-w: verify of a damaged chunk reports it and moves nothing (no quarantine)' '
	p=$(chunk_paths "$GOOD" A | head -n 1) && [ -f "$p" ] &&
	flip_byte "$p" 0 &&
	chmod -R a-w "$REPO" &&
	save_state &&
	expect_exit 1 verify -r "$REPO" "$GOOD" &&
	grep -Eq "^problem: .*agent A: chunk .*(mismatch|damaged)" "$OUT" &&
	state_unchanged &&
	[ ! -e "$REPO/quarantine" ] &&
	chmod -R u+w "$REPO" &&
	flip_byte "$p" 0 &&
	expect_ok verify -r "$REPO" "$GOOD"
'

if ro true 2>/dev/null && ! ro touch "$REPO/.probe" 2>/dev/null; then
	HAVE_RO=1
else
	HAVE_RO=0
fi

if [ $HAVE_RO = 1 ]; then
test_expect_success 'read-only bind mount (writable bits): every reader works, no byte changes' '
	save_state &&
	run_readers ro_cs &&
	state_unchanged &&
	grep -q "^restored snapshot $GOOD" "$OUT" &&
	ro_cs ls -r "$REPO" --json >"$OUT" &&
	json_check "[s[\"stale\"] for s in d if s[\"id\"] == $STALE] == [True]"
'

test_expect_success 'read-only bind mount: prune refuses in one line, exit 2' '
	ro_cs prune -r "$REPO" >"$OUT" 2>"$ERR"; RC=$?
	expect_eq "$RC" 2 "exit status" && err_is_one_line &&
	err_matches "read-only"
'

test_expect_success 'a manifest with unmerged WAL content: read on a read-only mount, nothing changed' '
	# A writer that died before checkpointing: its last transaction
	# (forgetting snapshot FIRST) is only in manifest.db-wal.
	python3 - "$REPO/manifest.db" "$FIRST" <<-\PY &&
	import os, sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	db.execute("pragma wal_autocheckpoint = 0")
	db.execute("pragma foreign_keys = on")
	db.execute("delete from snapshots where id = ?", (int(sys.argv[2]),))
	db.commit()
	os._exit(0)
	PY
	[ -s "$REPO/manifest.db-wal" ] &&
	save_state &&
	ro_cs ls -r "$REPO" --json >"$OUT" 2>"$ERR" &&
	json_check "$FIRST not in [s[\"id\"] for s in d]" &&
	json_check "$GOOD in [s[\"id\"] for s in d]" &&
	ro_cs verify -r "$REPO" "$GOOD" >"$OUT" 2>"$ERR" &&
	state_unchanged
'

test_expect_success 'the same WAL without its -shm cannot be read read-only: one line, exit 2' '
	rm -f "$REPO/manifest.db-shm" &&
	save_state &&
	ro_cs ls -r "$REPO" >"$OUT" 2>"$ERR"; RC=$?
	expect_eq "$RC" 2 "exit status" && err_is_one_line &&
	err_matches "manifest.db-wal holds changes not yet merged" &&
	state_unchanged
'
else
test_skip 'read-only bind mount' 'mount namespaces unavailable here'
test_skip 'read-only bind mount: prune' 'mount namespaces unavailable here'
test_skip 'unmerged WAL on a read-only mount' 'mount namespaces unavailable here'
test_skip 'WAL without -shm' 'mount namespaces unavailable here'
fi

test_expect_success 'schema version 1: readers say it needs an upgrade (exit 2) and change nothing' '
	rm -rf "$REPO/manifest.db-wal" "$REPO/manifest.db-shm" &&
	sql "pragma user_version = 1" &&
	chmod -R a-w "$REPO" &&
	save_state &&
	for c in "ls" "show" "verify"; do
		expect_error 2 $c -r "$REPO" &&
		err_matches "schema version 1 needs an upgrade that only a writing command \(snapshot, forget, prune\) does" || return 1
	done &&
	expect_error 2 restore -r "$REPO" -c "$CONF" &&
	err_matches "needs an upgrade" &&
	state_unchanged &&
	chmod -R u+w "$REPO"
'

test_done

#!/bin/bash
# Snapshot ids never come back (issue 10): after forget removes the newest
# snapshot its id is not given again; a version 2 manifest (ids reused)
# is read as it is by ls, and upgraded in place by the first writing
# command, which keeps every snapshot verifying.
. "$(dirname "$0")/lib.sh"

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
S1='' S2='' ABORTED=''

# aborted_snapshot: a snapshot that times out (its marker held on A->B).
aborted_snapshot () {
	expect_ok channel -c "$CONF" hold A B &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --timeout 1 &&
	expect_ok channel -c "$CONF" release A B
}
max_id () { sql "select max(id) from snapshots"; }

# to_version_2: rewrite the manifest as version 2 wrote it: no
# AUTOINCREMENT, no identity.
to_version_2 () {
	sql "pragma foreign_keys = off; begin;
	create table s2(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL,
	 finished_at TEXT, status TEXT NOT NULL
	 CHECK (status IN ('running','complete','aborted')),
	 initiator TEXT NOT NULL, config TEXT NOT NULL, reason TEXT,
	 digest TEXT, lock TEXT);
	insert into s2 select id, started_at, finished_at, status, initiator,
	 config, reason, digest, lock from snapshots;
	drop table snapshots; alter table s2 rename to snapshots;
	drop table repository; delete from sqlite_sequence;
	pragma user_version = 2; commit;" &&
	rm -f "$REPO/blobs/.repository-id"
}

test_expect_success 'setup: A, B; two complete snapshots and an aborted one' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot && S1=$SNAP_ID &&
	take_snapshot && S2=$SNAP_ID &&
	aborted_snapshot &&
	ABORTED=$(max_id) &&
	expect_eq "$(snap_status "$ABORTED")" aborted "status of $ABORTED" &&
	[ "$ABORTED" -gt "$S2" ]
'

test_expect_success 'forget drops the newest (aborted) one: the next snapshot gets a new id' '
	expect_ok forget -r "$REPO" --keep-last 2 --json &&
	json_check "d[\"forgotten\"] == [$ABORTED]" &&
	take_snapshot &&
	[ "$SNAP_ID" -gt "$ABORTED" ] ||
	    { say "snapshot $SNAP_ID reuses a forgotten id (<= $ABORTED)"; false; }
'

test_expect_success 'a version 2 manifest: ls reads it as it is, and does not upgrade it' '
	aborted_snapshot && ABORTED=$(max_id) &&
	to_version_2 &&
	expect_ok ls -r "$REPO" --json &&
	json_check "len(d) >= 4 and all(s[\"repository\"] is None for s in d)" &&
	expect_ok verify -r "$REPO" "$S2" &&
	expect_eq "$(sql "pragma user_version")" 2 "schema version after readers" &&
	[ ! -e "$REPO/blobs/.repository-id" ]
'

test_expect_success 'the first writer upgrades it: version 3, an identity, ids never come back' '
	expect_ok forget -r "$REPO" --keep-last 3 --json &&
	json_check "$ABORTED in d[\"forgotten\"]" &&
	expect_eq "$(sql "pragma user_version")" 3 "schema version" &&
	sql "select sql from sqlite_master where name = '\''snapshots'\''" |
	    grep -q AUTOINCREMENT &&
	id=$(cat "$REPO/blobs/.repository-id") &&
	expect_eq "$(sql "select id from repository")" "$id" "identity" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "all(s[\"repository\"] == \"$id\" for s in d)" &&
	take_snapshot &&
	[ "$SNAP_ID" -gt "$ABORTED" ] &&
	n=0 && for s in $(sql "select id from snapshots where status = '\''complete'\''"); do
		expect_ok verify -r "$REPO" "$s" || return 1
		n=$((n + 1))
	done && [ "$n" -ge 3 ]
'

test_done

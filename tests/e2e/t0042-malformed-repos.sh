#!/usr/bin/env bash
# A table of malformed repositories, in the spirit of pg_verifybackup's
# tests: each damage has its own expected exit status and error line from
# verify, restore refuses it and leaves the data files untouched. An extra
# (unreferenced) blob is not a problem: blobs are shared between snapshots
# and an aborted snapshot may leave some behind; verify stays quiet.
. "$(dirname "$0")/lib.sh"

# blob_of AGENT: the path of the agent's (single) chunk in snapshot 1.
blob_of () {
	local sha
	sha=$(sql "select sha256 from agent_chunks where snapshot_id = 1 and
	    agent = '$1' and idx = 0") || return 1
	echo "$REPO/blobs/${sha:0:2}/$sha"
}

test_expect_success 'setup: snapshot 1 with 10 in flight, agents stopped, files saved' '
	make_config A B &&
	# The blobs are read and damaged here as the chunks themselves.
	expect_ok init -r "$REPO" --compression none &&
	start_cluster &&
	set_balances A=100 B=50 &&
	snapshot_in_flight 10 && expect_eq "$SNAP_ID" 1 "id" &&
	stop_cluster &&
	expect_eq "$(sql "select count(*) from agent_chunks where snapshot_id = 1")" 2 "chunks" &&
	sql "pragma wal_checkpoint(truncate)" >/dev/null &&
	cp A.data A.keep && cp B.data B.keep &&
	cp -a "$REPO" "$TEST_DIR/good"
'

# damage NAME: apply one damage to a fresh copy of the good repository.
damage () {
	local a
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" || return 1
	a=$(blob_of A) || return 1
	case $1 in
	extra-blob)
		mkdir -p "$REPO/blobs/ee" &&
		printf x >"$REPO/blobs/ee/ee$(printf '%062d' 0)" ;;
	missing-blob) rm "$a" ;;
	size-mismatch) truncate -s 20 "$a" ;;
	same-size-change)
		printf Z | dd of="$a" bs=1 seek=20 conv=notrunc 2>/dev/null ;;
	truncated-manifest) truncate -s 8192 "$REPO/manifest.db" ;;
	garbage-manifest)
		head -c 20000 /dev/urandom >"$REPO/manifest.db" ;;
	schema-version) sql "pragma user_version = 99" ;;
	orphan-messages)
		sql "pragma foreign_keys = off; delete from channels where src = 'A'" ;;
	orphan-chunks)
		sql "pragma foreign_keys = off; delete from agents where name = 'B'" ;;
	orphan-agent)
		sql "pragma foreign_keys = off; update agents set snapshot_id = 7
		    where name = 'B'" ;;
	*) say "no damage $1"; return 1 ;;
	esac
}

# NAME|exit status|a line verify must print (extended regex; stdout+stderr)
cases='
extra-blob|0|^snapshot 1: ok \(2 agents, 1 in-flight message\)$
missing-blob|1|^problem: snapshot 1: agent A: chunk 0 \([0-9a-f]{12}\): missing \(expected [0-9]+ bytes at .*/blobs/[0-9a-f]{2}/[0-9a-f]{64}\)$
size-mismatch|1|^problem: snapshot 1: agent A: chunk 0 \([0-9a-f]{12}\): size mismatch: expected [0-9]+ bytes, found 20$
same-size-change|1|^problem: snapshot 1: agent A: chunk 0 \([0-9a-f]{12}\) sha256 mismatch: its bytes no longer hash to its name; blob [0-9a-f]{64} moved to .*/quarantine/; the next snapshot stores it again from the live file$
truncated-manifest|2|^cutsnap: verify: repository .*: manifest.db is not a usable manifest: database disk image is malformed$
garbage-manifest|2|^cutsnap: verify: repository .*: manifest.db is not a usable manifest: file is not a database$
schema-version|10|^cutsnap: verify: repository .*: unsupported manifest schema version 99 \(expected [0-9]+\)$
orphan-messages|1|^problem: snapshot 1: manifest: row 1 of table messages has no matching row in table channels$
orphan-chunks|1|^problem: snapshot 1: manifest: row 2 of table agent_chunks has no matching row in table agents$
orphan-agent|1|^problem: snapshot 1: manifest: row 2 of table agents has no matching row in table snapshots$
'

while IFS='|' read -r name want line; do
	[ -n "$name" ] || continue
	title="$name: verify exits $want with its own line"
	[ "$want" = 0 ] || title="$title; restore refused, files untouched"
	test_expect_success "$title" "
		damage $name &&
		expect_exit $want verify -r \"\$REPO\" 1 &&
		cat \"\$OUT\" \"\$ERR\" >\"\$TEST_DIR/.both\" &&
		{ grep -Eq -- '$line' \"\$TEST_DIR/.both\" ||
		    { say 'no line matching: $line'; show_out; false; }; } &&
		if [ $want = 0 ]; then
			[ ! -s \"\$ERR\" ]
		else
			err_matches '^cutsnap: verify: ' &&
			expect_exit '1|2|10' restore -r \"\$REPO\" 1 -c \"\$CONF\" &&
			cmp A.data A.keep && cmp B.data B.keep
		fi
	"
done <<EOF
$cases
EOF

test_expect_success 'the good repository still verifies and restores to 150' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	expect_ok verify -r "$REPO" 1 &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	expect_eq "$(dump_total bal)" 150 "restored total"
'

test_done

#!/bin/bash
# An encrypted repository authenticates each snapshot's rows with its
# master key. Someone with write access but no password rewires the newer
# snapshot's file and chunk rows to the older snapshot's chunks and
# recomputes the unkeyed digest exactly as the product does
# (rowdigest.py): verify fails naming the snapshot ("rows not
# authenticated by the repository key"), show and restore refuse, and
# restore writes nothing. Removing the row MACs as well (as if the
# snapshot came from an older version) fails too. verify --no-password
# says it could not check the rows' authenticity (stderr and
# "rows_authenticity_checked": false).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE

# rewire DB NEW OLD: NEW's agents and chunk rows become OLD's, and NEW's
# digest is recomputed.
rewire () {
	sql "delete from agent_chunks where snapshot_id = $2;
	    insert into agent_chunks(snapshot_id, agent, idx, offset, size, sha256)
	      select $2, agent, idx, offset, size, sha256 from agent_chunks where snapshot_id = $3;
	    delete from agents where snapshot_id = $2;
	    insert into agents(snapshot_id, name, data_path, size, sha256)
	      select $2, name, data_path, size, sha256 from agents where snapshot_id = $3;" "$1" &&
	python3 "$_lib_dir/rowdigest.py" "$1" "$2"
}

test_expect_success 'two encrypted snapshots, the balances differ' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	set_balances A=100 B=50 && put_random A 8 &&
	take_snapshot --password-file pw && OLD=$SNAP_ID &&
	set_balances A=300 && put_random A 8 &&
	take_snapshot --password-file pw && NEW=$SNAP_ID &&
	stop_cluster &&
	expect_eq "$(dump_total bal)" 350 "total"
'

test_expect_success 'rows rewired to the older chunks, digest recomputed: verify fails naming the snapshot' '
	cp -a "$REPO" good &&
	rewire "$REPO/manifest.db" "$NEW" "$OLD" &&
	expect_error 1 verify -r "$REPO" "$NEW" --password-file pw &&
	grep -q "^problem: snapshot $NEW: rows not authenticated by the repository key: edited without the key" "$OUT" &&
	expect_exit 1 verify -r "$REPO" "$NEW" --password-file pw --json &&
	json_check "d[\"ok\"] is False and any(\"rows not authenticated\" in p for p in d[\"problems\"])"
'

test_expect_success 'show of the rewired snapshot refuses too' '
	expect_error 1 show -r "$REPO" "$NEW" --password-file pw &&
	err_matches "snapshot $NEW: rows not authenticated by the repository key"
'

test_expect_success 'restore of the rewired snapshot refuses and writes nothing' '
	expect_exit 1 restore -r "$REPO" "$NEW" -c "$CONF" --password-file pw &&
	err_matches "snapshot $NEW failed verification" &&
	expect_eq "$(dump_total bal)" 350 "total after the refused restore"
'

test_expect_success 'the row macs removed as well: still not authenticated' '
	sql "delete from snapshot_row_macs" "$REPO/manifest.db" &&
	expect_exit 1 verify -r "$REPO" "$NEW" --password-file pw --json &&
	json_check "any(\"rows not authenticated\" in p and \"removed\" in p for p in d[\"problems\"])" &&
	expect_exit 1 restore -r "$REPO" "$NEW" -c "$CONF" --password-file pw
'

test_expect_success 'the untouched copy verifies, and restores the newer balance' '
	expect_ok verify -r good --password-file pw &&
	expect_ok verify -r good "$OLD" --password-file pw &&
	expect_ok restore -r good "$NEW" -c "$CONF" --password-file pw &&
	expect_eq "$(dump_val A.data bal)" 300 "A restored"
'

test_expect_success 'verify --no-password says the rows were not authenticated' '
	expect_ok verify -r good --no-password &&
	grep -q "rows.*authenticity.*not checked" "$ERR" &&
	expect_ok verify -r good --no-password --json &&
	json_check "d[\"rows_authenticity_checked\"] is False" &&
	expect_ok verify -r good --password-file pw --json &&
	json_check "d[\"rows_authenticity_checked\"] is True"
'

test_done

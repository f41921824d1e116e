#!/bin/bash
# Encrypted repositories: "cutsnap init --encrypt" seals every chunk and
# every recorded channel message (AES-256-GCM under a master key that is
# stored only sealed by password-derived keys) and names chunks by a keyed
# hash. A snapshot leaves no copy of a marker string or of a balance
# anywhere in the repository (manifest.db and its -wal included); restore
# with the password gives the files back, with a wrong or missing one it
# refuses before writing; a flipped bit in a chunk, a sealed message or a
# sealed key is caught; password changes keep every snapshot readable.
. "$(dirname "$0")/lib.sh"

# Set by the cases; empty (not unset) if one of them failed.
# shellcheck disable=SC2034 # used inside the test bodies
FIRST='' ID='' K='' NEW=''

# Cheap keys: the default scrypt cost (about half a second) is for people.
export CUTSNAP_SCRYPT_N=1024
export CUTSNAP_CHUNK_SIZE=16384
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE CUTSNAP_NEW_PASSWORD \
    CUTSNAP_NEW_PASSWORD_FILE

MARK=QQcutsnapMARKER7731QQ
BAL_A=918273645
BAL_B=564738291
# nott_exit CODE ARGS: like expect_exit, without a controlling terminal,
# where a password that was not given cannot be asked for.
nott_exit () {
	local want=$1
	shift
	setsid -w timeout -k 5 30 "$CUTSNAP" "$@" </dev/null >"$OUT" 2>"$ERR"
	RC=$?
	[ "$RC" = "$want" ] && return 0
	say "cutsnap $* (no terminal): expected exit $want, got $RC"
	show_out
	return 1
}
# found REPO STRING: STRING is somewhere in REPO's files (the test's
# control that the search below can see what it looks for).
found () { grep -r -a -q -F -- "$2" "$1"; }
# nowhere STRING: no file of REPO holds STRING; counts the files searched.
nowhere () {
	local n
	n=$(find "$REPO" -type f | wc -l)
	[ "$n" -ge 3 ] || { say "only $n files in $REPO"; return 1; }
	[ -f "$REPO/manifest.db" ] || { say "no manifest.db"; return 1; }
	! grep -r -a -l -F -- "$1" "$REPO" || { say "$1 found in $REPO"; return 1; }
}
files_same () { cmp A.data A.before && cmp B.data B.before; }
save_files () { cp A.data A.before && cp B.data B.before; }

test_expect_success 'init --encrypt without a password (no terminal): exit 2, one line, nothing made' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	printf "%s\n" "wrong horse" >bad &&
	printf "%s\n" "second horse" >pw2 &&
	printf "%s\n" "third horse" >pw3 &&
	nott_exit 2 init -r "$REPO" --encrypt &&
	err_is_one_line &&
	err_matches "a password is needed" &&
	[ ! -e "$REPO/manifest.db" ]
'

test_expect_success 'init --encrypt with --password-file: settings and one key' '
	rm -rf "$REPO" &&
	expect_ok init -r "$REPO" --encrypt --password-file pw --json &&
	json_check "d[\"encrypted\"] is True and d[\"compression\"] == \"zstd\"" &&
	expect_eq "$(sql "select value from repo_settings where name = '"'"'encryption'"'"'")" aes-256-gcm "encryption" &&
	expect_ok key -r "$REPO" list --json &&
	json_check "len(d) == 1 and d[0][\"kdf\"] == \"scrypt\" and d[0][\"n\"] == 1024"
'

test_expect_success 'a snapshot with a marker, balances and a message in flight' '
	start_cluster &&
	set_balances A=$BAL_A B=$BAL_B &&
	for i in $(seq 1 400); do printf "%s line %d\n" "$MARK" "$i"; done >mark.val &&
	cs put -c "$CONF" A note - <mark.val &&
	expect_ok get -c "$CONF" A note && cp "$OUT" note.want &&
	grep -q "$MARK" note.want &&
	cs put -c "$CONF" A zqxvault 5000 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:zqxvault B:zqxvault 4321 &&
	snapshot_bg --initiator B --password-file pw &&
	wait_recorded B &&
	snapshot_running &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	FIRST=$SNAP_ID &&
	expect_eq "$(sql "select count(*) from messages where snapshot_id = $FIRST")" 1 "recorded messages"
'

test_expect_success 'the same cluster into an unencrypted repository shows every string (control)' '
	expect_ok init -r "$TEST_DIR/plain" --compression none &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/plain" &&
	found "$TEST_DIR/plain" "$MARK" &&
	found "$TEST_DIR/plain" "$BAL_A" &&
	found "$TEST_DIR/plain" "$BAL_B" &&
	found "$TEST_DIR/plain" zqxvault &&
	found . "$MARK"
'

test_expect_success 'the encrypted repository holds no marker, balance or key name anywhere' '
	ls "$REPO"/manifest.db* >/dev/null &&
	nowhere "$MARK" &&
	nowhere "$BAL_A" &&
	nowhere "$BAL_B" &&
	nowhere zqxvault &&
	nowhere 4321 &&
	sha=$(sql "select sha256 from agent_chunks where snapshot_id = $FIRST and agent = '"'"'A'"'"' and idx = 0") &&
	[ -f "$REPO/blobs/${sha:0:2}/$sha" ] &&
	[ "$(head -c 16384 A.data | sha256sum | cut -d" " -f1)" != "$sha" ]
'

test_expect_success 'ls needs no password; verify and show without one: exit 2, one line' '
	expect_ok ls -r "$REPO" --json &&
	json_check "len(d) == 1 and d[0][\"status\"] == \"complete\"" &&
	nott_exit 2 verify -r "$REPO" "$FIRST" &&
	err_is_one_line && err_matches "password is needed" &&
	nott_exit 2 show -r "$REPO" "$FIRST" &&
	err_is_one_line && err_matches "password is needed"
'

test_expect_success 'verify with the password passes; a wrong one: exit 12, one line' '
	expect_ok verify -r "$REPO" "$FIRST" --password-file pw &&
	CUTSNAP_PASSWORD_FILE=pw expect_ok verify -r "$REPO" "$FIRST" &&
	CUTSNAP_PASSWORD="correct horse" expect_ok verify -r "$REPO" "$FIRST" &&
	expect_error 12 verify -r "$REPO" "$FIRST" --password-file bad &&
	err_matches "wrong password"
'

test_expect_success 'restore with a wrong or missing password refuses before writing' '
	stop_cluster &&
	save_files &&
	expect_error 12 restore -r "$REPO" "$FIRST" -c "$CONF" --password-file bad &&
	err_matches "wrong password" &&
	files_same &&
	nott_exit 2 restore -r "$REPO" "$FIRST" -c "$CONF" &&
	err_is_one_line &&
	files_same
'

test_expect_success 'restore with the password gives the files back and replays the message' '
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$FIRST" -c "$CONF" --password-file pw &&
	start_cluster &&
	expect_eq "$(bal A)" "$BAL_A" "A bal" &&
	expect_eq "$(bal B)" "$BAL_B" "B bal" &&
	expect_ok get -c "$CONF" A note && cmp "$OUT" note.want &&
	expect_eq "$(cs get -c "$CONF" A zqxvault)" 679 "A zqxvault" &&
	expect_eq "$(cs get -c "$CONF" B zqxvault)" 4321 "B zqxvault (replayed)"
'

test_expect_success 'a flipped bit in a sealed chunk: verify names it; restore refuses, files untouched' '
	take_snapshot --password-file pw &&
	ID=$SNAP_ID &&
	BLOB=$(chunk_paths "$ID" A | sed -n 1p) && HEX=$(basename "$BLOB") &&
	size=$(stat -c %s "$BLOB") &&
	flip_byte "$BLOB" $((size / 2)) &&
	stop_cluster && save_files &&
	expect_exit 1 verify -r "$REPO" "$ID" --password-file pw &&
	grep -q "^problem: snapshot $ID: agent A: chunk 0 (${HEX:0:12}) damaged: its object no longer decodes; blob $HEX moved to .*/quarantine/" "$OUT" &&
	expect_exit 1 restore -r "$REPO" "$ID" -c "$CONF" --password-file pw &&
	files_same &&
	start_cluster &&
	take_snapshot --password-file pw &&
	expect_ok verify -r "$REPO" "$ID" --password-file pw
'

test_expect_success 'a flipped bit in a sealed message: verify names it; restore refuses' '
	sql "update messages set data = substr(data, 1, 20) ||
	    case when substr(data, 21, 1) = x'"'"'00'"'"' then x'"'"'01'"'"' else x'"'"'00'"'"' end ||
	    substr(data, 22) where snapshot_id = $FIRST" &&
	stop_cluster && save_files &&
	expect_exit 1 verify -r "$REPO" "$FIRST" --password-file pw &&
	grep -q "^problem: snapshot $FIRST: channel A->B: message seq 1 damaged: its sealed payload does not open" "$OUT" &&
	expect_exit 1 restore -r "$REPO" "$FIRST" -c "$CONF" --password-file pw &&
	files_same
'

test_expect_success 'key add + key remove: the new password opens every snapshot, the old one nothing' '
	expect_ok key -r "$REPO" add --password-file pw --new-password-file pw2 --json &&
	NEW=$(json_get "d[\"id\"]") &&
	expect_ok key -r "$REPO" list --json &&
	json_check "len(d) == 2" &&
	expect_error 2 key -r "$REPO" remove 1 --password-file pw &&
	err_matches "the one this password opens" &&
	expect_ok key -r "$REPO" remove 1 --password-file pw2 &&
	expect_error 12 verify -r "$REPO" "$ID" --password-file pw &&
	err_matches "wrong password" &&
	n=0 &&
	for id in $(sql "select id from snapshots where status = '"'"'complete'"'"' and id != $FIRST"); do
		expect_ok verify -r "$REPO" "$id" --password-file pw2 || return 1
		n=$((n + 1))
	done &&
	[ "$n" -ge 2 ] &&
	expect_ok key -r "$REPO" list --json &&
	json_check "[k[\"id\"] for k in d] == [$NEW]"
'

test_expect_success 'key passwd: the new password opens every snapshot, the old one nothing' '
	CUTSNAP_NEW_PASSWORD_FILE=pw3 expect_ok key -r "$REPO" passwd --password-file pw2 &&
	expect_error 12 verify -r "$REPO" "$ID" --password-file pw2 &&
	n=0 &&
	for id in $(sql "select id from snapshots where status = '"'"'complete'"'"' and id != $FIRST"); do
		expect_ok verify -r "$REPO" "$id" --password-file pw3 || return 1
		n=$((n + 1))
	done &&
	[ "$n" -ge 2 ] &&
	rm -f A.data B.data &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --password-file pw3 &&
	start_cluster &&
	expect_eq "$(bal A)" "$BAL_A" "A bal after restore" &&
	stop_cluster
'

test_expect_success 'a flipped bit in a sealed key: it opens nothing; verify with another key names it, restore refuses' '
	expect_ok key -r "$REPO" add --password-file pw3 --new-password-file pw &&
	K=$(sql "select min(id) from repo_keys") &&
	sql "update repo_keys set sealed = substr(sealed, 1, 20) ||
	    case when substr(sealed, 21, 1) = x'"'"'00'"'"' then x'"'"'01'"'"' else x'"'"'00'"'"' end ||
	    substr(sealed, 22) where id = $K" &&
	save_files &&
	expect_error 12 restore -r "$REPO" "$ID" -c "$CONF" --password-file pw3 &&
	err_matches "wrong password" &&
	files_same &&
	expect_exit 1 verify -r "$REPO" "$ID" --password-file pw &&
	grep -q "^problem: snapshot $ID: key $K damaged: its row no longer matches its check" "$OUT" &&
	expect_exit 1 restore -r "$REPO" "$ID" -c "$CONF" --password-file pw &&
	files_same &&
	expect_ok key -r "$REPO" remove "$K" --password-file pw &&
	expect_ok verify -r "$REPO" "$ID" --password-file pw
'

test_expect_success 'snapshot with a wrong or missing password: exit 12 (wrong) or 2 (missing), one line, no snapshot row' '
	start_cluster &&
	n=$(sql "select count(*) from snapshots") &&
	expect_error 12 snapshot -c "$CONF" -r "$REPO" --password-file bad &&
	err_matches "wrong password" &&
	nott_exit 2 snapshot -c "$CONF" -r "$REPO" &&
	err_is_one_line && err_matches "password is needed" &&
	expect_eq "$(sql "select count(*) from snapshots")" "$n" "snapshot rows"
'

test_expect_success '--key authenticates an encrypted snapshot too' '
	head -c 32 /dev/urandom >hmac.key &&
	take_snapshot --password-file pw --key hmac.key &&
	expect_ok verify -r "$REPO" "$SNAP_ID" --password-file pw --key hmac.key &&
	head -c 32 /dev/urandom >other.key &&
	expect_exit 1 verify -r "$REPO" "$SNAP_ID" --password-file pw --key other.key &&
	stop_cluster
'

test_expect_success 'key on an unencrypted repository, bad verbs: exit 2, one line' '
	expect_error 2 key -r "$TEST_DIR/plain" list &&
	err_matches "not encrypted" &&
	expect_error 2 key -r "$REPO" frobnicate &&
	err_matches "unknown key command" &&
	expect_error 2 key -r "$REPO" remove &&
	expect_error 2 key -r "$REPO" remove 99 --password-file pw &&
	err_matches "has no key 99"
'

test_done

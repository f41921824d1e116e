#!/bin/bash
# A key row whose form is damaged (its salt cut short) is reported as
# damaged, naming the row, not as a wrong password: with no other key,
# no password can open the repository; with another key, that one still
# opens it and the message says which row could not be tried. A wrong
# password with every row intact is still "wrong password".
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE

test_expect_success 'setup: an encrypted repository with a snapshot, then a second key' '
	make_config A B &&
	printf "right\n" >pw && printf "other\n" >pw2 && printf "wrong\n" >bad &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot --password-file pw &&
	stop_cluster &&
	cp -r "$REPO" one-key &&
	expect_ok key -r "$REPO" add --password-file pw --new-password-file pw2 &&
	K=$(sql "select min(id) from repo_keys") &&
	expect_error 12 verify -r "$REPO" --password-file bad &&
	err_matches "wrong password \(none of its 2 keys opens with it\)$"
'

test_expect_success 'the only key row damaged: named as damaged, not a wrong password' '
	sql "update repo_keys set salt = zeroblob(1)" one-key/manifest.db &&
	expect_error 2 verify -r one-key --password-file pw &&
	err_matches "repository .*one-key: key row [0-9]+ is damaged \(its scrypt parameters, salt or sealed key are malformed\), so no password can open it$" &&
	! grep -q "wrong password" "$ERR"
'

test_expect_success 'one of two rows damaged: the other key opens; the damaged one is named' '
	sql "update repo_keys set salt = zeroblob(1) where id = $K" &&
	expect_error 2 verify -r "$REPO" --password-file pw &&
	err_matches "key row $K is damaged \(.*\), and none of the other 1 opens with this password$" &&
	! grep -q "wrong password" "$ERR" &&
	expect_exit 1 verify -r "$REPO" --password-file pw2 &&
	grep -q "key $K" "$OUT"
'

test_done

#!/bin/bash
# "--" ends the options of every command, also after the first operand of
# put, add and transfer (whose later arguments may start with '-'), so a
# key starting with '-' can be named; a value that is "--" follows an
# earlier "--". A password file loses one trailing newline, LF or CRLF,
# as the docs say, and nothing else: a lone trailing CR is part of the
# password.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE

test_expect_success 'setup: a cluster of A and B' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50
'

test_expect_success 'put, get, add, del and transfer take "--" before a key starting with -' '
	expect_ok put -c "$CONF" A -- -k 7 &&
	expect_ok get -c "$CONF" A -- -k && expect_eq "$(cat "$OUT")" 7 "A:-k" &&
	expect_ok add -c "$CONF" A -- -k -2 &&
	expect_ok add -c "$CONF" -- A -k -1 &&
	expect_ok get -c "$CONF" -- A -k && expect_eq "$(cat "$OUT")" 4 "A:-k" &&
	expect_ok transfer -c "$CONF" A:bal -- B:-t 10 &&
	expect_ok get -c "$CONF" B -- -t && expect_eq "$(cat "$OUT")" 10 "B:-t" &&
	expect_ok del -c "$CONF" A -- -k &&
	expect_exit 1 get -c "$CONF" A -- -k &&
	expect_eq "$(bal A)" 90 "A:bal"
'

test_expect_success 'a value "--" follows an earlier "--"; without one it is an end of options' '
	expect_ok put -c "$CONF" -- A v -- &&
	expect_ok get -c "$CONF" A v && expect_eq "$(cat "$OUT")" -- "A:v" &&
	expect_error 2 put -c "$CONF" A w -- &&
	err_matches "expected AGENT KEY VALUE, got 2 arguments"
'

test_expect_success 'status, snapshot, ls and verify accept a trailing "--"' '
	expect_ok status -c "$CONF" --json -- &&
	expect_ok init -r "$REPO" -- &&
	expect_ok snapshot -c "$CONF" -r "$REPO" -- &&
	expect_ok ls -r "$REPO" -- &&
	expect_ok verify -r "$REPO" --
'

test_expect_success 'a lone trailing CR is part of the password' '
	printf "secret\r" >pw-cr && printf "secret" >pw-plain &&
	expect_ok init -r crrepo --encrypt --password-file pw-cr &&
	expect_ok snapshot -c "$CONF" -r crrepo --password-file pw-cr &&
	expect_error 12 verify -r crrepo --password-file pw-plain &&
	err_matches "wrong password" &&
	expect_ok verify -r crrepo --password-file pw-cr
'

test_expect_success 'one trailing LF or CRLF is dropped' '
	printf "pw2\n" >pw-lf && printf "pw2\r\n" >pw-crlf && printf "pw2" >pw-bare &&
	expect_ok init -r lfrepo --encrypt --password-file pw-lf &&
	expect_ok snapshot -c "$CONF" -r lfrepo --password-file pw-crlf &&
	expect_ok verify -r lfrepo --password-file pw-bare &&
	printf "pw2\n\n" >pw-two &&
	expect_error 12 verify -r lfrepo --password-file pw-two
'

test_done

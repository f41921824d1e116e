#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# CUTSNAP_REPOSITORY and CUTSNAP_CONFIG stand for -r and -c when those are
# not given (an option on the command line wins), and --password-command
# CMD / CUTSNAP_PASSWORD_COMMAND read an encrypted repository's password
# from a command's stdout; a command that fails is one clear error line
# (the command's own stderr, like a shell's "not found", is the user's).
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE CUTSNAP_PASSWORD_COMMAND \
    CUTSNAP_NEW_PASSWORD CUTSNAP_NEW_PASSWORD_FILE CUTSNAP_REPOSITORY \
    CUTSNAP_CONFIG

# ids FILE: the ids of an "ls --json" listing, one line.
ids () { python3 -c 'import json,sys; print(" ".join(str(s["id"]) for s in json.load(open(sys.argv[1]))))' "$1"; }

test_expect_success 'setup: two agents, an encrypted repository, password from a command' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	printf "%s\n" "correct horse" >pw &&
	expect_ok init -r "$REPO" --encrypt --password-command "cat pw"
'

test_expect_success 'CUTSNAP_CONFIG and CUTSNAP_REPOSITORY: snapshot and ls without -c, -r' '
	CUTSNAP_CONFIG=$CONF CUTSNAP_REPOSITORY=$REPO \
	    expect_ok snapshot --password-file pw &&
	CUTSNAP_REPOSITORY=$REPO expect_ok ls --json &&
	expect_eq "$(ids "$OUT")" "1" "snapshots listed through the variable"
'

test_expect_success 'an option on the command line wins over the variable' '
	mkdir other &&
	CUTSNAP_REPOSITORY=$TEST_DIR/other/none expect_ok ls -r "$REPO" --json &&
	expect_eq "$(ids "$OUT")" "1" "-r given" &&
	CUTSNAP_CONFIG=$TEST_DIR/nothere.ini expect_ok status -c "$CONF" --json
'

test_expect_success 'a variable naming nothing: the usual error, naming its value' '
	CUTSNAP_CONFIG=$TEST_DIR/nothere.ini expect_error 2 status &&
	err_matches "nothere.ini" &&
	CUTSNAP_REPOSITORY=$TEST_DIR/other/none expect_error 10 ls &&
	err_matches "other/none"
'

test_expect_success 'load does not take CUTSNAP_REPOSITORY (its -r turns on snapshots)' '
	CUTSNAP_REPOSITORY=$TEST_DIR/other/none expect_ok load -c "$CONF" \
	    --seconds 1 --clients 1 --json &&
	[ ! -e other/none ]
'

test_expect_success '--password-command and CUTSNAP_PASSWORD_COMMAND open the repository' '
	expect_ok verify -r "$REPO" --password-command "cat pw" --json &&
	CUTSNAP_PASSWORD_COMMAND="cat pw" CUTSNAP_REPOSITORY=$REPO \
	    expect_ok verify --json &&
	expect_ok verify -r "$REPO" --password-command="printf \"correct horse\\r\\n\"" --json
'

test_expect_success 'a wrong password from the command is a wrong password' '
	setsid -w timeout 30 "$CUTSNAP" verify -r "$REPO" \
	    --password-command "echo wrong horse" </dev/null >"$OUT" 2>"$ERR";
	[ $? -ne 0 ] && err_is_one_line && err_matches "wrong password"
'

test_expect_success 'a failing, killed, silent or missing command: one line naming it' '
	expect_error 2 verify -r "$REPO" --password-command "exit 3" &&
	err_matches "password command .exit 3. failed with exit status 3" &&
	expect_error 2 verify -r "$REPO" --password-command "kill -9 \$\$" &&
	err_matches "killed by signal 9" &&
	expect_error 2 verify -r "$REPO" --password-command "true" &&
	err_matches "printed no password" &&
	expect_error 2 verify -r "$REPO" --password-command "head -c 100000 /dev/zero" &&
	err_matches "printed more than" &&
	CUTSNAP_PASSWORD_COMMAND=no-such-command-here expect_exit 2 verify -r "$REPO" &&
	err_matches "no-such-command-here. failed with exit status 127" &&
	expect_error 2 verify -r "$REPO" --password-command &&
	err_matches "--password-command needs CMD"
'

test_expect_success '--password-file comes before --password-command' '
	expect_ok verify -r "$REPO" --password-file pw --password-command "exit 1"
'

test_done

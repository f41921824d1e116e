#!/bin/bash
# "snapshot --json" into an encrypted repository derives its key once: the
# listing row it prints at the end needs no key, so the repository is not
# unlocked a second time (no second password read, no second scrypt). The
# password comes from a FIFO written once: a second read would wait for a
# writer that never comes.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024
unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE
CS_TIMEOUT=20

# once_fifo FILE: a FIFO that gives the password to its first reader only.
once_fifo () {
	rm -f "$1" && mkfifo "$1" || return 1
	printf "%s\n" "correct horse" >"$1" &
	BG_PIDS="$BG_PIDS $!"
}

test_expect_success 'an encrypted repository, a cluster with a balance' '
	make_config A B &&
	printf "%s\n" "correct horse" >pw &&
	expect_ok init -r "$REPO" --encrypt --password-file pw &&
	start_cluster &&
	set_balances A=700 B=300
'

test_expect_success 'snapshot --json reads the password once and prints the row' '
	once_fifo pw.fifo &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --json -q --password-file pw.fifo &&
	json_check "d[\"id\"] == 1 and d[\"status\"] == \"complete\" and d[\"chunks\"][\"copied\"] >= 2"
'

test_expect_success 'the snapshot it took opens with the password' '
	expect_ok verify -r "$REPO" 1 --password-file pw --json &&
	json_check "d[\"ok\"] is True and d[\"chunks\"] >= 2"
'

test_expect_success 'a wrong password through the FIFO: exit 12, one line, nothing taken' '
	rm -f pw.fifo && mkfifo pw.fifo &&
	{ printf "%s\n" "wrong horse" >pw.fifo & } &&
	expect_exit 12 snapshot -c "$CONF" -r "$REPO" --json -q --password-file pw.fifo &&
	json_check "d[\"status\"] == \"aborted\" and \"wrong password\" in d[\"error\"]" &&
	expect_eq "$(sql "select count(*) from snapshots")" 1 "snapshots"
'

test_done

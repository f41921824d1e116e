#!/bin/bash
# Private keys and tls_dir open to group or others (mode & 077) are
# refused, as ssh refuses them: at agent start, by the commands and by
# cert, naming the file, its mode and the chmod to run; cert makes them
# 0600 and 0700. Nothing starts and nothing changes meanwhile.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

test_expect_success 'setup: A and B on TCP + TLS; cert makes tls_dir 0700, every key 0600' '
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF" &&
	expect_ok cert -c "$CONF" --client ro --role read-only &&
	expect_eq "$(stat -c %a tls)" 700 "tls mode" &&
	for f in ca client A B ro; do
		expect_eq "$(stat -c %a "tls/$f.key")" 600 "$f.key mode" || return 1
	done
'

test_expect_success 'an agent key readable by group: the agent does not start, exit 2, one line' '
	chmod 640 tls/A.key &&
	expect_error 2 agent -c "$CONF" --name A &&
	err_matches "private key .*/tls/A.key is mode 0640, open to group or others; run: chmod 600 .*/tls/A.key" &&
	[ ! -e A.data ]
'

test_expect_success 'start says so too, and starts no agent with it' '
	chmod 604 tls/A.key &&
	expect_exit 1 start -c "$CONF" &&
	err_matches "A.key is mode 0604" &&
	_record_agent_pids &&
	! agent_up A
'

test_expect_success 'tls_dir open to others: the agent does not start, naming the directory' '
	chmod 600 tls/A.key && chmod 755 tls &&
	expect_error 2 agent -c "$CONF" --name A &&
	err_matches "tls_dir .*/tls is mode 0755, open to group or others; run: chmod 700 .*/tls" &&
	chmod 700 tls &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'a command refuses tls_dir open to group, exit 1, and sends nothing' '
	chmod 770 tls &&
	expect_error 1 transfer -c "$CONF" A:bal B:bal 10 &&
	err_matches "tls_dir .*/tls is mode 0770" &&
	expect_error 1 cert -c "$CONF" &&
	err_matches "tls_dir .*/tls is mode 0770" &&
	chmod 700 tls &&
	expect_eq "$(bal A)" 100 "A bal"
'

test_expect_success 'a command refuses its own key open to others, the chosen certificate'\''s too' '
	chmod 644 tls/client.key &&
	expect_error 1 put -c "$CONF" A bal 1 &&
	err_matches "private key .*/tls/client.key is mode 0644.*chmod 600" &&
	chmod 600 tls/client.key &&
	chmod 660 tls/ro.key &&
	expect_error 1 get -c "$CONF" --cert ro A bal &&
	err_matches "private key .*/tls/ro.key is mode 0660" &&
	chmod 600 tls/ro.key &&
	expect_ok get -c "$CONF" --cert ro A bal &&
	expect_eq "$(cat "$OUT")" 100 "A bal"
'

test_expect_success 'cert refuses a CA key open to group before signing anything' '
	rm tls/B.crt tls/B.key &&
	chmod 640 tls/ca.key &&
	expect_error 1 cert -c "$CONF" &&
	err_matches "private key .*/tls/ca.key is mode 0640" &&
	[ ! -e tls/B.crt ] &&
	expect_error 1 cert -c "$CONF" --client bk --role backup &&
	[ ! -e tls/bk.crt ] &&
	chmod 600 tls/ca.key &&
	expect_ok cert -c "$CONF" &&
	expect_eq "$(stat -c %a tls/B.key)" 600 "B.key mode"
'

test_expect_success 'cert --out into a directory open to others is refused' '
	mkdir -m 755 pub &&
	expect_error 1 cert -c "$CONF" --client bk --role backup --out pub &&
	err_matches "directory pub is mode 0755, open to group or others; run: chmod 700 pub" &&
	[ ! -e pub/bk.key ]
'

test_done

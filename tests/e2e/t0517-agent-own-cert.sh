#!/bin/bash
# An agent checks its own certificate before it starts and refuses (exit
# 2, one line naming the file and why) one that is another agent's, one
# that has expired, one not from the cluster's CA, and one whose key is
# not its own; with its own, it starts.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

# variant DIR: a config like CONF whose tls_dir is DIR/tls, with the
# cluster's CA copied there; its path in VCONF.
variant () {
	mkdir -p "$1" && mkdir -m 700 "$1/tls" && cp tls/ca.crt tls/ca.key "$1/tls/" &&
	sed -e "s|^run_dir = run|run_dir = $TEST_DIR/run|" \
	    -e "s|^tls_dir = tls|tls_dir = $TEST_DIR/$1/tls|" "$CONF" >"$1/c.ini" &&
	VCONF=$TEST_DIR/$1/c.ini
}

test_expect_success 'setup: agents A and B on loopback, their certificates' '
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF"
'

test_expect_success 'another agent'\''s certificate (and key): refused at start' '
	variant imp && cp tls/B.crt imp/tls/A.crt && cp tls/B.key imp/tls/A.key &&
	expect_error 2 agent -c "$VCONF" --name A &&
	err_matches "^cutsnap: agent: A: certificate $TEST_DIR/imp/tls/A[.]crt is for .B., not agent A: give each agent its own \(cutsnap cert\)$"
'

test_expect_success 'an expired certificate of the cluster CA: refused at start' '
	variant exp && CUTSNAP_TEST_CERT_DAYS=-2 cs cert -c "$VCONF" >/dev/null &&
	! openssl x509 -in exp/tls/A.crt -noout -checkend 0 >/dev/null &&
	expect_error 2 agent -c "$VCONF" --name A &&
	err_matches "^cutsnap: agent: A: certificate $TEST_DIR/exp/tls/A[.]crt of agent A expired on .*: renew it \(cutsnap cert\)$"
'

test_expect_success 'a certificate from another CA: refused at start' '
	mkdir -p other && mkdir -m 700 other/tls &&
	sed -e "s|^run_dir = run|run_dir = $TEST_DIR/run|" \
	    -e "s|^tls_dir = tls|tls_dir = $TEST_DIR/other/tls|" "$CONF" >other/c.ini &&
	expect_ok cert -c other/c.ini &&
	cp tls/ca.crt other/tls/ca.crt &&
	expect_error 2 agent -c other/c.ini --name A &&
	err_matches "^cutsnap: agent: A: certificate $TEST_DIR/other/tls/A[.]crt is not signed by the cluster CA $TEST_DIR/other/tls/ca[.]crt: unable to get local issuer certificate \(cutsnap cert issues one\)$"
'

test_expect_success 'its own certificate with another key: refused at start' '
	variant key && cp tls/A.crt key/tls/A.crt && cp tls/B.key key/tls/A.key &&
	expect_error 2 agent -c "$VCONF" --name A &&
	err_matches "A[.](crt|key)"
'

test_expect_success 'with their own certificates, the agents start and serve' '
	start_cluster &&
	wait_for 10 channels_up 4 &&
	set_balances A=100 B=50 &&
	expect_eq "$(total)" 150 "total"
'

test_done

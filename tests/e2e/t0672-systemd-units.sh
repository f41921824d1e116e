#!/bin/bash
# The systemd units that `make install` puts under SYSTEMDUNITDIR: where
# the machine runs systemd they are started for real (an agent as a
# Type=notify service, a snapshot service run once); elsewhere (a
# container) systemd-analyze verify checks them, with no warning at all,
# and a broken copy shows that the check would catch one.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$_lib_dir/../.." && pwd)
P=$TEST_DIR/prefix
U=$P/lib/systemd/system

test_expect_success 'make install puts the units, with the installed binary in them' '
	make -s -C "$SRC" install BIN="$CUTSNAP" PREFIX="$P" >make.out 2>&1 &&
	for u in cutsnap-agent@.service cutsnap-snapshot@.service \
	    cutsnap-snapshot@.timer; do
		[ -f "$U/$u" ] || { say "no $U/$u"; return 1; }
	done &&
	! grep -q "@BINDIR@" "$U"/* &&
	n=$(grep -c "^ExecStart=$P/bin/cutsnap " "$U/cutsnap-snapshot@.service") &&
	expect_eq "$n" 3 "snapshot, forget, verify" &&
	grep -q "^ExecStart=$P/bin/cutsnap agent -c \${CUTSNAP_CONFIG} --name %i\$" \
	    "$U/cutsnap-agent@.service" &&
	grep -q "^Type=notify\$" "$U/cutsnap-agent@.service" &&
	grep -q "^WatchdogSec=" "$U/cutsnap-agent@.service" &&
	grep -q "^Restart=on-failure\$" "$U/cutsnap-agent@.service" &&
	[ -f "$P/lib/sysusers.d/cutsnap.conf" ]
'

test_expect_success SYSTEMD 'under systemd: the agent unit starts, is ready, answers and stops' '
	make_config A && mkdir -p run &&
	inst=cs-e2e-$$ &&
	mkdir -p /run/systemd/system &&
	sed -e "s|^User=.*||" -e "s|^Group=.*||" -e "s|^ProtectHome=.*||" \
	    -e "s|^ProtectSystem=.*||" "$U/cutsnap-agent@.service" \
	    >"/run/systemd/system/cutsnap-agent-$inst@.service" &&
	echo "CUTSNAP_CONFIG=$CONF" >"$TEST_DIR/A.env" &&
	mkdir -p "/run/systemd/system/cutsnap-agent-$inst@A.service.d" &&
	printf "[Service]\nEnvironmentFile=$TEST_DIR/A.env\n" \
	    >"/run/systemd/system/cutsnap-agent-$inst@A.service.d/env.conf" &&
	systemctl daemon-reload &&
	timeout 60 systemctl start "cutsnap-agent-$inst@A.service" &&
	cs status -c "$CONF" &&
	timeout 60 systemctl stop "cutsnap-agent-$inst@A.service" &&
	! cs status -c "$CONF"
	rc=$?
	rm -rf /run/systemd/system/cutsnap-agent-$inst@*
	systemctl daemon-reload
	return $rc
'

test_expect_success 'systemd-analyze verify: the units, no warning' '
	command -v systemd-analyze >/dev/null || { say "no systemd-analyze"; return 1; }
	MANPATH=$P/share/man systemd-analyze verify "$U/cutsnap-agent@A.service" \
	    "$U/cutsnap-snapshot@nightly.service" \
	    "$U/cutsnap-snapshot@nightly.timer" >verify.out 2>&1 &&
	! grep . verify.out
'

test_expect_success 'systemd-analyze verify catches a broken unit (the check can fail)' '
	mkdir -p bad &&
	sed "s|^ExecStart=$P/bin/cutsnap|ExecStart=$TEST_DIR/no/cutsnap|" \
	    "$U/cutsnap-agent@.service" >bad/cutsnap-agent@.service &&
	! MANPATH=$P/share/man systemd-analyze verify bad/cutsnap-agent@A.service \
	    >bad.out 2>&1 &&
	grep -q "is not executable" bad.out &&
	sed "s|^WatchdogSec=|WatchdogSecc=|" "$U/cutsnap-agent@.service" \
	    >bad/cutsnap-agent@.service &&
	MANPATH=$P/share/man systemd-analyze verify bad/cutsnap-agent@A.service \
	    >bad2.out 2>&1
	grep -q "Unknown key .WatchdogSecc." bad2.out
'

test_done

#!/usr/bin/env bash
# radosgw.sh - a throw-away S3 server for the tests: one Ceph monitor, one
# OSD on memstore and radosgw, all on loopback in a temporary directory.
#
#   radosgw.sh start DIR   start it in DIR (created), wait until S3 answers,
#                          create a user and write DIR/env (AWS_ENDPOINT_URL,
#                          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
#                          AWS_REGION) for the tests to source
#   radosgw.sh stop DIR    stop the daemons started in DIR (by their pid
#                          files) and remove DIR
#   radosgw.sh run CMD...  start in a new temporary directory, run CMD with
#                          CUTSNAP_S3_ENV=DIR/env in its environment, stop,
#                          and exit with CMD's status (make test uses this)
#
# RGW_MEMSTORE_BYTES caps the OSD's in-memory store (default 1 GiB).
# Needs root (the daemons' data lives in DIR, no systemd) and the Debian
# packages radosgw, ceph-mon and ceph-osd (scripts/deps.sh). When the
# server cannot be started, "run" still runs CMD, with CUTSNAP_S3_ENV
# pointing to a file that says why, so the s3 tests fail rather than skip.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../python.sh"

die () { echo "radosgw.sh: $*" >&2; exit 1; }

free_port () {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start () {
	local d=$1 fsid mport rport i key secret
	mkdir -p "$d"/mon "$d"/osd "$d"/run "$d"/log || die "cannot create $d"
	d=$(cd "$d" && pwd)
	for t in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool; do
		command -v $t >/dev/null || die "$t not installed (scripts/deps.sh installs radosgw ceph-mon ceph-osd)"
	done
	fsid=$(cat /proc/sys/kernel/random/uuid)
	mport=$(free_port) && rport=$(free_port) || die "no free port"
	cat >"$d/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mport
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc secure
run dir = $d/run
log file = $d/log/\$name.log
admin socket = $d/run/\$name.asok
pid file = $d/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon max pg per osd = 1000
[mon.a]
mon data = $d/mon
[osd.0]
osd data = $d/osd
osd objectstore = memstore
memstore device bytes = ${RGW_MEMSTORE_BYTES:-1073741824}
osd journal size = 0
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rport
rgw data = $d/rgw
rgw dns name = 127.0.0.1
rgw thread pool size = 64
EOF
	monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mport]" \
	    "$d/monmap" >/dev/null || die "monmaptool failed"
	ceph-mon -c "$d/ceph.conf" -i a --mkfs --monmap "$d/monmap" >/dev/null 2>&1 ||
	    die "ceph-mon --mkfs failed (see $d/log)"
	ceph-mon -c "$d/ceph.conf" -i a || die "ceph-mon did not start"
	C="ceph -c $d/ceph.conf --connect-timeout 10"
	i=0
	until $C osd create >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -gt 60 ] && die "monitor not answering"
		sleep 0.5
	done
	ceph-osd -c "$d/ceph.conf" -i 0 --mkfs >/dev/null 2>&1 ||
	    die "ceph-osd --mkfs failed (see $d/log)"
	ceph-osd -c "$d/ceph.conf" -i 0 || die "ceph-osd did not start"
	mkdir -p "$d/rgw"
	radosgw -c "$d/ceph.conf" -n client.rgw.a || die "radosgw did not start"
	i=0
	until curl -s -o /dev/null "http://127.0.0.1:$rport/"; do
		i=$((i + 1)); [ $i -gt 240 ] && die "radosgw not answering on port $rport (see $d/log)"
		sleep 0.5
	done
	out=$(radosgw-admin -c "$d/ceph.conf" user create --uid=cutsnap \
	    --display-name=cutsnap --access-key=CUTSNAPTESTKEY \
	    --secret-key=cutsnap-test-secret 2>"$d/log/user.err") ||
	    die "radosgw-admin user create failed: $(tail -n 1 "$d/log/user.err")"
	cat >"$d/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$rport
export AWS_ACCESS_KEY_ID=CUTSNAPTESTKEY
export AWS_SECRET_ACCESS_KEY=cutsnap-test-secret
export AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE
EOF
}

stop () {
	local d=$1 f p i
	[ -d "$d" ] || return 0
	for f in "$d"/run/client.rgw.a.pid "$d"/run/osd.0.pid "$d"/run/mon.a.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		[ -n "$p" ] || continue
		kill "$p" 2>/dev/null
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.2; i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$d"
}

case ${1:-} in
start) [ $# -eq 2 ] || die "usage: radosgw.sh start DIR"; start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: radosgw.sh stop DIR"; stop "$2" ;;
run)
	shift
	[ $# -ge 1 ] || die "usage: radosgw.sh run CMD..."
	dir=$(mktemp -d /tmp/cs-rgw.XXXXXX) || die "mktemp failed"
	trap 'stop "$dir"' EXIT INT TERM
	if ! msg=$( (start "$dir") 2>&1 ); then
		echo "$msg" >&2
		echo "radosgw.sh: the S3 server did not start; the s3 tests will fail" >&2
		printf 'CUTSNAP_S3_DOWN=%q\n' "${msg:-unknown reason}" >"$dir/env.down"
		export CUTSNAP_S3_ENV=$dir/env.down
	else
		export CUTSNAP_S3_ENV=$dir/env
	fi
	"$@"
	exit $?
	;;
*) die "usage: radosgw.sh start DIR | stop DIR | run CMD..." ;;
esac

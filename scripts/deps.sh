#!/bin/sh
# Install the Debian packages the build and the tests need, when missing.
# Runs apt-get only if something is missing (and only as root).
# "deps.sh bench": the tools only the benchmark compares with (make bench-deps).
set -e
pkgs=""
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || pkgs="$pkgs $1"; }
if [ "${1:-}" = bench ]; then
	list="restic borgbackup openssl"
else
	# libsystemd-dev: sd-daemon.h (the agent loads libsystemd0 when run
	# by systemd); systemd: systemd-analyze verify of the units;
	# python3-prometheus-client: the metrics test's parser.
	list="gcc make pkg-config libsqlite3-dev libssl-dev libinih-dev libisal-dev
	      libcmocka-dev libzstd-dev zlib1g-dev zstd perl sqlite3 procps valgrind clang libclang-rt-14-dev
	      python3 man-db groff-base iproute2 libcurl4-openssl-dev curl libsystemd-dev
	      systemd python3-prometheus-client
	      radosgw ceph-mon ceph-osd"
fi
for p in $list; do
	need "$p"
done
[ -z "$pkgs" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "cutsnap: missing packages:$pkgs; install them with: sudo apt-get install$pkgs" >&2
	exit 1
fi
echo "installing:$pkgs"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq $pkgs >/dev/null

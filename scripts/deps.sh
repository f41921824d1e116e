#!/bin/sh
# Install the Debian packages one part of the work needs, when missing.
# Runs apt-get only if something is missing (and only as root).
#   deps.sh build  the compiler and the libraries: all `make` needs
#   deps.sh test   what the tests run (make check, make test, .ci/run):
#                  cmocka, valgrind, clang for the fuzzers, python3,
#                  radosgw and ceph for the object-store tests, ...
#   deps.sh bench  the tools only the benchmark compares with
#                  (make bench-deps)
# Several lists may be named at once ("deps.sh build test").
set -e
pkgs=""
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || pkgs="$pkgs $1"; }
# README.md "Build" says what each library is for.
# libsystemd-dev: sd-daemon.h (the agent loads libsystemd0 when run by
# systemd); systemd: systemd-analyze verify of the units;
# python3-prometheus-client: the metrics test's parser.
build="gcc make pkg-config libsqlite3-dev libssl-dev libinih-dev libisal-dev
       libzstd-dev zlib1g-dev libcurl4-openssl-dev libsystemd-dev"
test="libcmocka-dev zstd perl sqlite3 procps valgrind clang libclang-rt-14-dev
      python3 man-db groff-base iproute2 curl systemd python3-prometheus-client
      radosgw ceph-mon ceph-osd"
bench="restic borgbackup openssl"
[ $# -gt 0 ] || { echo "usage: sh scripts/deps.sh build|test|bench..." >&2; exit 2; }
list=""
for what in "$@"; do
	case $what in
	build) list="$list $build" ;;
	test) list="$list $test" ;;
	bench) list="$list $bench" ;;
	*) echo "scripts/deps.sh: unknown list '$what' (build, test or bench)" >&2; exit 2 ;;
	esac
done
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

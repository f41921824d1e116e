#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# libcutsnap as an application gets it: `make install DESTDIR PREFIX=/usr`
# puts cutsnap.h, libcutsnap.so.0 (soname libcutsnap.so.0), libcutsnap.a,
# cutsnap.pc and cutsnap(3) in place; a program built with only those and
# `cc $(pkg-config --cflags --libs cutsnap)` runs against a live agent
# (tests/e2e/libapp.c: every single request, pipelined gets,
# transactions with their conditions, errors, a snapshot); the shared object exports exactly the header's functions.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$_lib_dir/../.." && pwd)
ROOT=$TEST_DIR/root
# The tree the binary under test was built in (make asan: build-asan).
BUILD=build SANFLAGS=""
case $(basename "$CUTSNAP") in
*-asan)
	BUILD=build-asan
	SANFLAGS="-fsanitize=address,undefined"
	;;
esac

# The functions cutsnap.h declares, one a line, sorted.
header_names () {
	sed -n 's/^[a-z].*[ *]\(cs_[a-z0-9_]*\)(.*/\1/p' \
	    "$ROOT/usr/include/cutsnap.h" | sort -u
}

test_expect_success 'make install DESTDIR PREFIX=/usr: header, libraries, .pc, manual' '
	make -s -C "$SRC" install DESTDIR="$ROOT" PREFIX=/usr BUILD="$BUILD" \
	    BIN="$CUTSNAP" >"$OUT" 2>"$ERR" || { show_out; return 1; }
	for f in include/cutsnap.h lib/libcutsnap.so.0 lib/libcutsnap.a \
	    lib/pkgconfig/cutsnap.pc share/man/man3/cutsnap.3 \
	    share/man/man3/cs_commit.3; do
		[ -s "$ROOT/usr/$f" ] || { say "missing $f"; return 1; }
	done &&
	expect_eq "$(readlink "$ROOT/usr/lib/libcutsnap.so")" libcutsnap.so.0 \
	    "the development link" &&
	readelf -d "$ROOT/usr/lib/libcutsnap.so.0" >"$OUT" &&
	grep -q "SONAME.*\[libcutsnap.so.0\]" "$OUT"
'

test_expect_success 'the shared object exports exactly the functions of cutsnap.h' '
	header_names >want &&
	nm -D --defined-only "$ROOT/usr/lib/libcutsnap.so.0" |
	    awk "\$2 != \"A\" { sub(/@.*/, \"\", \$3); print \$3 }" |
	    sort -u >have &&
	at_least 30 "functions in cutsnap.h" $(cat want) &&
	diff want have >&2
'

test_expect_success 'a program built from cutsnap.h and cutsnap.pc only' '
	export PKG_CONFIG_PATH=$ROOT/usr/lib/pkgconfig \
	    PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$ROOT/usr/lib/pkgconfig &&
	flags=$(pkg-config --cflags --libs cutsnap) &&
	say "pkg-config: $flags" &&
	cp "$_lib_dir/libapp.c" . &&
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror $SANFLAGS -o libapp libapp.c $flags &&
	LD_LIBRARY_PATH=$ROOT/usr/lib ldd ./libapp >"$OUT" &&
	grep -q "libcutsnap.so.0 => $ROOT/usr/lib/libcutsnap.so.0" "$OUT"
'

test_expect_success 'the orders example'"'"'s C service builds the same way' '
	flags=$(pkg-config --cflags --libs cutsnap) &&
	# shellcheck disable=SC2086
	cc -std=c11 -Wall -Wextra -Werror $SANFLAGS -o inventory \
	    "$SRC/examples/orders/inventory.c" $flags &&
	[ -x inventory ]
'

test_expect_success 'it runs against a live agent' '
	make_config A B &&
	start_cluster &&
	APID=$(agent_pid A) &&
	LD_LIBRARY_PATH=$ROOT/usr/lib timeout 60 ./libapp "$CONF" A \
	    "$TEST_DIR/run/A.sock" "$REPO" >"$OUT" 2>"$ERR" || { show_out; return 1; }
	cat "$OUT" >&2 &&
	json_check "d[\"protocol\"] == $(wire_version) and d[\"put\"] == 0 and d[\"get\"] == 0 and d[\"value\"] == \"hello\"" &&
	json_check "d[\"get_absent\"] == 1 and d[\"get_absent_null\"] == 1" &&
	json_check "d[\"add\"] == 0 and d[\"add2\"] == 0 and d[\"sum\"] == 42" &&
	json_check "d[\"add_text\"] == -1 and d[\"add_text_kind\"] == -1 and d[\"add_text_msg\"] == \"integer\"" &&
	json_check "d[\"del\"] == 0 and d[\"del_again\"] == 1" &&
	json_check "d[\"bad_key\"] == -1 and d[\"bad_key_kind\"] == -1" &&
	json_check "d[\"status\"] == 0 and d[\"status_pid\"] == $APID and d[\"status_has_agent\"] == 1" &&
	json_check "d[\"txn\"] == 0 and d[\"txn_added\"] == 5" &&
	json_check "d[\"txn_conflict\"] == 2 and d[\"txn_conflict_msg\"] == \"operation 1\" and d[\"txn_conflict_t2\"] == 1" &&
	json_check "d[\"getv\"] == 0 and d[\"txn_version\"] == 0 and d[\"txn_version_again\"] == 2" &&
	json_check "d[\"pipelined_ok\"] == 100 and d[\"put_while_piped\"] == -1" &&
	json_check "d[\"path_get\"] == \"42\" and d[\"unknown_agent\"] == \"refused\"" &&
	json_check "d[\"snapshot\"] == 0 and d[\"snapshot_id\"] >= 1"
'

test_expect_success 'what the program did is what the command sees' '
	expect_ok get -c "$CONF" A n &&
	expect_eq "$(cat "$OUT")" 42 "n on A" &&
	expect_error 1 get -c "$CONF" A k &&
	expect_ok get -c "$CONF" A p99 &&
	expect_eq "$(cat "$OUT")" v693 "p99 on A" &&
	expect_ok get -c "$CONF" A t1 &&
	expect_eq "$(cat "$OUT")" uno "t1 on A" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "[s[\"status\"] for s in d] == [\"complete\"]" &&
	stop_cluster
'

test_done

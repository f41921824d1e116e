#!/bin/bash
# libcurl is loaded only by a command that opens an s3:// repository
# (s3/curl_dl.h): agents and commands on a directory repository never
# map it, an S3 command does and works, and a libcurl that cannot be
# loaded, or lacks a function, is one clear error line on S3 commands
# while everything else keeps working.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

export CS_TIMEOUT=30

# loads_curl ARGS...: the command succeeds and the dynamic loader's trace
# (LD_DEBUG=libs) shows libcurl.so.4 being loaded.
loads_curl () {
	LD_DEBUG=libs LD_DEBUG_OUTPUT=$TEST_DIR/ld expect_ok "$@" &&
	cat "$TEST_DIR"/ld.* | grep -q "find library=libcurl.so.4"
}

test_expect_success 'a cluster, snapshots into a directory and into a bucket' '
	make_config A B &&
	start_cluster &&
	set_balances A=10 B=20 &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/repo" &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL"
'

test_expect_success 'running agents have not mapped libcurl' '
	pids=$(agent_pid A; agent_pid B) &&
	at_least 2 "agent processes" $pids &&
	for p in $pids; do
		grep -q "libcrypto" "/proc/$p/maps" || return 1
		! grep -q "libcurl" "/proc/$p/maps" || { say "agent $p maps libcurl"; return 1; }
	done
'

test_expect_success 'commands on a directory repository do not load libcurl' '
	rm -f "$TEST_DIR"/ld.* &&
	LD_DEBUG=libs LD_DEBUG_OUTPUT=$TEST_DIR/ld expect_ok verify -r "$TEST_DIR/repo" &&
	LD_DEBUG=libs LD_DEBUG_OUTPUT=$TEST_DIR/ld expect_ok ls -r "$TEST_DIR/repo" &&
	at_least 2 "loader traces" "$TEST_DIR"/ld.* &&
	! cat "$TEST_DIR"/ld.* | grep -q "libcurl"
'

test_expect_success 'an s3:// command loads libcurl and works' '
	rm -f "$TEST_DIR"/ld.* &&
	loads_curl verify -r "$REPO_URL" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 1"
'

test_expect_success 'a libcurl without its functions: one line naming the missing one, exit 2' '
	mkdir -p "$TEST_DIR/empty" &&
	echo "int cutsnap_not_curl;" >"$TEST_DIR/empty/e.c" &&
	cc -shared -fPIC -o "$TEST_DIR/empty/libcurl.so.4" "$TEST_DIR/empty/e.c" &&
	LD_LIBRARY_PATH=$TEST_DIR/empty expect_error 2 ls -r "$REPO_URL" &&
	err_matches "s3:// repositories need libcurl 7.75 or later: libcurl.so.4 has no curl_global_init" &&
	LD_LIBRARY_PATH=$TEST_DIR/empty expect_error 2 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "has no curl_global_init" &&
	LD_LIBRARY_PATH=$TEST_DIR/empty expect_ok snapshot -c "$CONF" -r "$TEST_DIR/repo"
'

test_expect_success 'a libcurl that does not load: one line with the loader error, exit 2' '
	mkdir -p "$TEST_DIR/bad" &&
	echo "not a shared object" >"$TEST_DIR/bad/libcurl.so.4" &&
	LD_LIBRARY_PATH=$TEST_DIR/bad expect_error 2 verify -r "$REPO_URL" &&
	err_matches "s3:// repositories need libcurl \(Debian: libcurl4\): .*libcurl.so.4" &&
	LD_LIBRARY_PATH=$TEST_DIR/bad expect_ok verify -r "$TEST_DIR/repo"
'

test_expect_success 'the bucket is unchanged by the refused commands and still verifies' '
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 1" &&
	expect_ok verify -r "$REPO_URL"
'

test_done

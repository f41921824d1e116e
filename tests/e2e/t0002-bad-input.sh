#!/bin/bash
# Bad configs, bad arguments, bad repositories and bad data files: the exit
# status, exactly one "cutsnap: ..." line on stderr, and nothing changed.
. "$(dirname "$0")/lib.sh"

# bad_config NAME: write TEST_DIR/NAME.ini from stdin.
bad_config () { cat >"$TEST_DIR/$1.ini"; }

bad_config garbage <<'INI'
[cluster]
run_dir = run
this line is not ini at all
[agent A]
data = a.data
INI

bad_config unknown-key <<'INI'
[cluster]
run_dir = run
[agent A]
data = a.data
colour = blue
INI

bad_config unknown-section <<'INI'
[cluster]
run_dir = run
[frobnicator A]
data = a.data
INI

bad_config duplicate <<'INI'
[cluster]
run_dir = run
[agent A]
data = a.data
[agent B]
data = b.data
[agent A]
data = c.data
INI

bad_config unknown-channel <<'INI'
[cluster]
run_dir = run
channels = A>B B>Z
[agent A]
data = a.data
[agent B]
data = b.data
INI

bad_config self-loop <<'INI'
[cluster]
run_dir = run
channels = A>A A>B
[agent A]
data = a.data
[agent B]
data = b.data
INI

bad_config no-data <<'INI'
[cluster]
run_dir = run
[agent A]
INI

bad_config bad-name <<'INI'
[cluster]
run_dir = run
[agent ../evil]
data = a.data
INI

bad_config no-agents <<'INI'
[cluster]
run_dir = run
INI

for c in garbage unknown-key unknown-section duplicate unknown-channel \
    self-loop no-data bad-name no-agents; do
	test_expect_success "config '$c': start exits 2 with one line naming the file, starts nothing" "
		expect_error 2 start -c \"\$TEST_DIR/$c.ini\" &&
		err_matches '$c\\.ini' &&
		[ -z \"\$(own_pids)\" ] &&
		expect_error 2 status -c \"\$TEST_DIR/$c.ini\"
	"
done

test_expect_success 'config with a garbage line: the error names the line' '
	expect_error 2 status -c "$TEST_DIR/garbage.ini" &&
	err_matches "garbage\.ini.*3|line 3"
'

test_expect_success 'missing config file: exit 2, one line' '
	expect_error 2 status -c "$TEST_DIR/nonexistent.ini" &&
	err_matches "nonexistent\.ini" &&
	expect_error 2 start -c "$TEST_DIR/nonexistent.ini"
'

test_expect_success 'setup: A=100, B=50' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50
'

balances_unchanged () {
	expect_eq "$(bal A)" 100 "A bal" && expect_eq "$(bal B)" 50 "B bal"
}

test_expect_success 'unknown agent: exit 2, one line naming it' '
	expect_error 2 get -c "$CONF" Zed bal &&
	err_matches "Zed" &&
	expect_error 2 put -c "$CONF" Zed bal 1 &&
	expect_error 2 transfer -c "$CONF" A:bal Zed:bal 1 &&
	balances_unchanged
'

test_expect_success 'transfer argument without AGENT:KEY form: exit 2' '
	expect_error 2 transfer -c "$CONF" A B 1 &&
	balances_unchanged
'

test_expect_success 'non-integer amount: exit 2, balances unchanged' '
	expect_error 2 transfer -c "$CONF" A:bal B:bal ten &&
	expect_error 2 transfer -c "$CONF" A:bal B:bal 1.5 &&
	expect_error 2 transfer -c "$CONF" A:bal B:bal 10x &&
	expect_error 2 add -c "$CONF" A bal abc &&
	balances_unchanged
'

test_expect_success 'zero and negative transfers: exit 2, balances unchanged' '
	expect_error 2 transfer -c "$CONF" A:bal B:bal 0 &&
	expect_error 2 transfer -c "$CONF" A:bal B:bal -5 &&
	balances_unchanged
'

test_expect_success 'transfer to itself: refused, balances unchanged' '
	expect_error "[12]" transfer -c "$CONF" A:bal A:bal 5 &&
	balances_unchanged
'

test_expect_success 'transfer over the balance: exit 1, balances unchanged' '
	expect_error 1 transfer -c "$CONF" A:bal B:bal 101 &&
	balances_unchanged &&
	expect_error 1 transfer -c "$CONF" B:bal A:bal 9223372036854775807 &&
	balances_unchanged
'

test_expect_success 'transfer from an absent key: exit 1, nothing created' '
	expect_error 1 transfer -c "$CONF" A:nokey B:bal 1 &&
	expect_exit 1 get -c "$CONF" A nokey &&
	balances_unchanged
'

test_expect_success 'transfer of exactly the balance leaves 0' '
	expect_ok transfer -c "$CONF" B:bal A:bal 50 &&
	expect_eq "$(bal B)" 0 "B bal" &&
	wait_bal A 150 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 50 &&
	wait_bal B 50 &&
	balances_unchanged
'

test_expect_success 'channel with an unknown agent: exit 2' '
	expect_error 2 channel -c "$CONF" hold A Zed &&
	expect_error 2 channel -c "$CONF" frob A B
'

test_expect_success 'snapshot with an unknown initiator: exit 2' '
	expect_error 2 snapshot -c "$CONF" -r "$REPO" --initiator Zed
'

test_expect_success 'snapshot with a bad timeout: exit 2' '
	expect_error 2 snapshot -c "$CONF" -r "$REPO" --timeout soon
'

test_expect_success 'missing repository: ls, verify and restore exit 10 naming it' '
	expect_error 10 ls -r "$TEST_DIR/norepo" &&
	err_matches "norepo" &&
	expect_error 10 verify -r "$TEST_DIR/norepo" &&
	err_matches "norepo" &&
	stop_cluster &&
	expect_error 10 restore -r "$TEST_DIR/norepo" -c "$CONF" &&
	err_matches "norepo" &&
	[ ! -e "$TEST_DIR/norepo" ]
'

test_expect_success 'a repository to look things up in' '
	start_cluster &&
	take_snapshot &&
	stop_cluster
'

test_expect_success 'unknown snapshot id: verify and restore exit 2 (a bad argument), files untouched' '
	cp A.data A.saved && cp B.data B.saved &&
	expect_error 2 verify -r "$REPO" 999 &&
	err_matches "999" &&
	expect_error 2 restore -r "$REPO" 999 -c "$CONF" &&
	cmp A.data A.saved && cmp B.data B.saved
'

test_expect_success 'snapshot id that is not a number: exit 2' '
	expect_error 2 verify -r "$REPO" latest-ish
'

test_expect_success 'dump of a missing file: exit 2, one line naming it' '
	expect_error 2 dump "$TEST_DIR/missing.data" &&
	err_matches "missing\.data"
'

test_expect_success 'dump of a file that is not a data file: exit 2' '
	echo "hello world, not a log" >notalog.data &&
	expect_error 2 dump "$TEST_DIR/notalog.data"
'

test_expect_success 'setup: a data file with many records' '
	start_cluster &&
	for i in $(seq 1 40); do
		cs put -c "$CONF" A "key$i" "value-$i" || return 1
	done &&
	stop_cluster &&
	expect_ok dump "$TEST_DIR/A.data" &&
	grep -qx "key40	value-40" "$OUT"
'

test_expect_success 'dump of a data file corrupted in the middle: exit 2 naming the offset' '
	off=$(grep -abo "value-20" A.data | head -n 1 | cut -d: -f1) &&
	[ -n "$off" ] &&
	cp A.data A.corrupt &&
	flip_byte A.corrupt $((off + 3)) &&
	! cmp -s A.data A.corrupt &&
	expect_error 2 dump "$TEST_DIR/A.corrupt" &&
	err_matches "A\.corrupt" &&
	{ sed "s|$TEST_DIR/A.corrupt||g" "$ERR" | grep -Eq "[0-9]+" ||
	    { say "no offset in the error line"; return 1; }; }
'

test_expect_success 'an agent refuses to start on a data file corrupted in the middle' '
	cp A.corrupt A.data &&
	expect_exit "[12]" start -c "$CONF" &&
	grep -q "^cutsnap: " "$ERR" &&
	expect_exit "[1-9]*" status -c "$CONF" &&
	cmp A.data A.corrupt
'

test_done

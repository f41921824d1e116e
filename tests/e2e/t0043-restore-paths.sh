#!/usr/bin/env bash
# Restore never writes outside the config's data paths: a symlink planted
# at a data path is refused, one at a temporary name is removed, neither
# is followed; agent
# names with "..", "/" or an absolute path in a tampered manifest are
# refused by verify and restore, and nothing is written anywhere.
. "$(dirname "$0")/lib.sh"

# The target a planted link points to; must never change.
VICTIM=$TEST_DIR/victim
# listing: every file under TEST_DIR except the test's own scratch.
listing () { find "$TEST_DIR" -path "$TEST_DIR/.*" -prune -o -print | sort; }

test_expect_success 'setup: a snapshot of A and B, agents stopped' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	wait_bal B 60 &&
	stop_cluster &&
	echo "precious" >"$VICTIM" &&
	cp -a "$REPO" "$TEST_DIR/good"
'

test_expect_success 'a symlink planted at a data path: refused, its target untouched' '
	mv A.data A.real &&
	ln -s "$VICTIM" A.data &&
	expect_error 1 restore -r "$REPO" 1 -c "$CONF" &&
	err_matches "A\.data" &&
	expect_eq "$(cat "$VICTIM")" precious "victim" &&
	[ -L A.data ] &&
	rm A.data && mv A.real A.data
'

test_expect_success 'symlinks planted at temporary names (the pid'"'"'s among them): removed, never followed' '
	# exec keeps the pid, so a link stands at the name a pid-named
	# temp would have.
	bash -c "ln -s \"$VICTIM\" \"$TEST_DIR/A.data.tmp.\$\$\" &&
	    ln -s \"$VICTIM\" \"$TEST_DIR/B.data.tmp.\$\$\" &&
	    ln -s \"$VICTIM\" \"$TEST_DIR/B.data.tmp.Ab12Cd\" &&
	    exec \"$CUTSNAP\" restore -r \"$REPO\" 1 -c \"$CONF\"" \
	    >"$OUT" 2>"$ERR"
	RC=$?
	expect_eq "$RC" 0 "exit status" &&
	expect_eq "$(cat "$VICTIM")" precious "victim" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 100/50 "A/B" &&
	expect_eq "$(ls "$TEST_DIR" | grep -c "\.data\.tmp\.")" 0 "temp names left"
'

for bad in ../evil /tmp/evil a/b; do
	test_expect_success "agent renamed '$bad' in the manifest: verify and restore refuse, nothing written" "
		rm -rf \"\$REPO\" && cp -a \"\$TEST_DIR/good\" \"\$REPO\" &&
		sql \"pragma foreign_keys = off; update agents set name = '$bad' where name = 'A'\" &&
		before=\$(listing) &&
		expect_error 1 verify -r \"\$REPO\" 1 &&
		grep -q 'malformed manifest row' \"\$OUT\" &&
		expect_error 1 restore -r \"\$REPO\" 1 -c \"\$CONF\" &&
		err_matches 'failed verification; nothing was restored' &&
		expect_eq \"\$(listing)\" \"\$before\" 'files under the test directory' &&
		[ ! -e /tmp/evil ] && [ ! -e \"\$TEST_DIR/../evil\" ]
	"
done

test_expect_success 'the untampered snapshot still restores into the data paths only' '
	rm -rf "$REPO" && cp -a "$TEST_DIR/good" "$REPO" &&
	expect_ok restore -r "$REPO" 1 -c "$CONF" &&
	expect_eq "$(dump_val A.data bal)/$(dump_val B.data bal)" 100/50 "A/B" &&
	expect_eq "$(cat "$VICTIM")" precious "victim"
'

test_done

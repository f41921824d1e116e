#!/bin/bash
# Config lines longer than 197 bytes (libinih's line buffer) are read
# whole: a data path of 230 bytes and a channels line listing every
# channel many times over, with inline comments; the cluster runs on
# them. A long key is refused with the file and line.
. "$(dirname "$0")/lib.sh"

LONG=$(printf "d%.0s" $(seq 1 200))

test_expect_success 'setup: a config with a long data path and a long channels line' '
	mkdir -p "$LONG" &&
	CONF=$TEST_DIR/cluster.ini && AGENTS="A B" &&
	{
		echo "[cluster]"
		echo "run_dir = run"
		printf "channels ="
		for i in $(seq 1 30); do printf " A>B B>A"; done
		echo "   ; both ways, thirty times"
		echo "[agent A]"
		echo "data = $TEST_DIR/$LONG/A.data   ; a long path"
		echo "[agent B]"
		echo "data = B.data"
	} >"$CONF" &&
	[ "$(awk "{ if (length > 197) n++ } END { print n }" "$CONF")" = 2 ]
'

test_expect_success 'the cluster runs with the data file at the long path' '
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 30 &&
	expect_eq "$(total)" 150 "total" &&
	test -s "$LONG/A.data" &&
	stop_cluster
'

test_expect_success 'a key longer than libinih reads: refused, file and line named' '
	printf "[agent A]\ndata = a\n%s = 1\n" "$LONG" >bad.ini &&
	expect_error 2 status -c bad.ini &&
	err_matches "bad[.]ini:3: key longer than [0-9]+ bytes"
'

test_done

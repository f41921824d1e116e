#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# restore --target DIR writes the snapshot into DIR instead of the
# cluster's data paths: DIR/cluster.ini with the snapshot's agents and
# channels, and each agent's file with the recorded in-flight messages
# replayed into it. The live cluster is not touched; the restored cluster
# starts from DIR and holds the cut's total; nothing in DIR is overwritten.
. "$(dirname "$0")/lib.sh"

json_py () { python3 -c 'import json,sys; d=json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }

test_expect_success 'setup: A=100 B=50, a transfer of 10 held in flight on A>B, snapshot' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	snapshot_bg --initiator B &&
	wait_recorded B &&
	expect_ok channel -c "$CONF" release A B &&
	snapshot_wait &&
	wait_bal B 60 &&
	expect_eq "$(sql "select count(*) from messages")" 1 "messages recorded" &&
	set_balances A=1 B=1 &&
	cp A.data A.live && cp B.data B.live
'

test_expect_success 'restore --target: a new directory with the cut, the live files untouched' '
	expect_ok restore -r "$REPO" --target "$TEST_DIR/copy" --json &&
	expect_eq "$(json_py "(d[\"ok\"], d[\"files\"], d[\"target\"], d[\"config\"])" "$OUT")" \
	    "(True, 2, '\''$TEST_DIR/copy'\'', '\''$TEST_DIR/copy/cluster.ini'\'')" "json" &&
	expect_eq "$(dump_val copy/A.data bal)" 90 "A in the copy" &&
	expect_eq "$(dump_val copy/B.data bal)" 60 "B in the copy (the message replayed)" &&
	cmp A.data A.live && cmp B.data B.live &&
	expect_eq "$(bal A):$(bal B)" "1:1" "live balances"
'

test_expect_success 'the written config names the snapshot agents and channels, on Unix sockets' '
	grep -qx "channels = A>B B>A" copy/cluster.ini &&
	grep -qx "data = A.data" copy/cluster.ini &&
	grep -qx "run_dir = run" copy/cluster.ini &&
	! grep -q "addr\|tls_dir" copy/cluster.ini
'

test_expect_success 'the restored cluster starts from the copy and holds 150' '
	expect_ok start -c "$TEST_DIR/copy/cluster.ini" &&
	expect_eq "$(cs get -c "$TEST_DIR/copy/cluster.ini" A bal):$(cs get -c "$TEST_DIR/copy/cluster.ini" B bal)" \
	    "90:60" "balances of the restored cluster" &&
	expect_ok status -c "$TEST_DIR/copy/cluster.ini" --json &&
	expect_eq "$(json_py "sorted(a[\"agent\"] for a in d if a[\"up\"])" "$OUT")" "['\''A'\'', '\''B'\'']" "agents up" &&
	expect_ok stop -c "$TEST_DIR/copy/cluster.ini" &&
	expect_eq "$(bal A):$(bal B)" "1:1" "live balances"
'

test_expect_success 'a directory that holds the config or a data file is refused, nothing changed' '
	cp copy/A.data A.copy &&
	expect_error 2 restore -r "$REPO" --target "$TEST_DIR/copy" &&
	err_matches "already holds cluster.ini" &&
	cmp copy/A.data A.copy &&
	mkdir part && echo keep >part/B.data &&
	expect_error 2 restore -r "$REPO" --target "$TEST_DIR/part" &&
	err_matches "already holds B.data" &&
	expect_eq "$(cat part/B.data)" keep "B.data kept" &&
	[ ! -e part/cluster.ini ] && [ ! -e part/A.data ]
'

test_expect_success '--target with -c or --agent is a usage error; a relative DIR works' '
	expect_error 2 restore -r "$REPO" --target x -c "$CONF" &&
	err_matches "give no -c" &&
	expect_error 2 restore -r "$REPO" --target x --agent A &&
	[ ! -e x ] &&
	CUTSNAP_CONFIG=$CONF expect_ok restore -r "$REPO" --target rel &&
	expect_eq "$(dump_val rel/B.data bal)" 60 "B in the relative copy"
'

test_expect_success 'a failed restore --target leaves no config behind' '
	expect_error 2 restore -r "$REPO" 99 --target "$TEST_DIR/none" &&
	[ ! -e none/cluster.ini ] &&
	expect_error 2 restore -r "$REPO" --target "$REPO/inside" &&
	err_matches "inside" &&
	[ ! -e "$REPO/inside" ]
'

test_done

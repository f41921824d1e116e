#!/bin/bash
# Config files as users write them: the example of the product's design
# verbatim (inline comments), the default run_dir, paths relative to the config whatever the
# working directory, a directory name with a space.
. "$(dirname "$0")/lib.sh"

test_expect_success 'the example config of the design, in a directory with a space' '
	mkdir -p "site one" &&
	cat >"site one/cluster.ini" <<-EOF &&
	[cluster]
	run_dir = run          ; agents'\''s sockets live here (default: run/ beside the config)

	[agent A]
	data = a.data

	[agent B]
	data = b.data
	EOF
	CONF="$TEST_DIR/site one/cluster.ini" && AGENTS="A B" && REPO="$TEST_DIR/site one/repo" &&
	start_cluster &&
	[ -S "site one/run/A.sock" ] && [ -f "site one/a.data" ] && [ -f "site one/b.data" ] &&
	set_balances A=10 B=20 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 3 &&
	wait_bal B 23 &&
	take_snapshot &&
	stop_cluster
'

test_expect_success 'relative -c from another working directory: same files' '
	mkdir -p elsewhere && cd elsewhere &&
	expect_ok start -c "../site one/cluster.ini" &&
	expect_ok get -c "../site one/cluster.ini" B bal &&
	expect_eq "$(cat "$OUT")" 23 "B" &&
	expect_ok stop -c "../site one/cluster.ini" &&
	expect_ok restore -r "../site one/repo" -c "../site one/cluster.ini" &&
	expect_ok verify -r "../site one/repo" &&
	[ ! -e run ] && [ ! -e a.data ] && [ ! -e b.data ] &&
	cd "$TEST_DIR"
'

test_expect_success 'run_dir omitted: run/ beside the config' '
	cd "$TEST_DIR" &&
	mkdir -p d2 &&
	printf "[cluster]\n\n[agent X]\ndata = x.data\n" >d2/c.ini &&
	expect_ok start -c "$TEST_DIR/d2/c.ini" &&
	[ -S d2/run/X.sock ] &&
	expect_eq "$(stat -c %a d2/run)" 700 "mode of the default run_dir" &&
	expect_ok stop -c "$TEST_DIR/d2/c.ini"
'

test_expect_success 'comments, blank lines, spaces around = and in channels' '
	mkdir -p d3 &&
	cat >d3/c.ini <<-EOF &&
	# a comment
	; another comment
	[cluster]
	  run_dir=sockets
	channels =   P>Q    Q>P
	[agent P]
	data   =   p.data

	[agent Q]
	data=q.data
	EOF
	expect_ok start -c "$TEST_DIR/d3/c.ini" &&
	[ -S d3/sockets/P.sock ] &&
	expect_ok put -c "$TEST_DIR/d3/c.ini" P bal 5 &&
	expect_ok transfer -c "$TEST_DIR/d3/c.ini" P:bal Q:bal 5 &&
	wait_for 10 eval "[ \"\$(cs get -c \"$TEST_DIR/d3/c.ini\" Q bal)\" = 5 ]" &&
	expect_ok stop -c "$TEST_DIR/d3/c.ini"
'

test_expect_success 'absolute data paths are used as they are' '
	mkdir -p d4 abs &&
	printf "[cluster]\nrun_dir = r\n[agent Z]\ndata = %s/abs/z.data\n" "$TEST_DIR" >d4/c.ini &&
	expect_ok start -c "$TEST_DIR/d4/c.ini" &&
	expect_ok put -c "$TEST_DIR/d4/c.ini" Z k v &&
	expect_ok stop -c "$TEST_DIR/d4/c.ini" &&
	expect_eq "$(dump_val abs/z.data k)" v "Z k"
'

test_expect_success 'a socket path too long for a Unix socket: exit 2 naming it' '
	long=$(printf "%0100d" 0 | tr 0 x) &&
	mkdir -p d5 &&
	printf "[cluster]\nrun_dir = %s\n[agent A]\ndata = a.data\n" "$long" >d5/c.ini &&
	expect_error 2 start -c "$TEST_DIR/d5/c.ini" &&
	err_matches "long|socket"
'

test_done

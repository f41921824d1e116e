#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# The command line contract on one small cluster: --help, usage errors,
# put/get/del/add, values from stdin, status, dump.
. "$(dirname "$0")/lib.sh"

SUBCOMMANDS="agent start stop status put get del add transfer channel dump
snapshot ls verify restore demo"

test_expect_success 'every subcommand has --help: exit 0, text on stdout' '
	for c in $SUBCOMMANDS; do
		expect_ok "$c" --help || return 1
		[ -s "$OUT" ] || { say "$c --help printed nothing"; return 1; }
		grep -q "$c" "$OUT" || { say "$c --help does not name $c"; return 1; }
	done
'

test_expect_success 'cutsnap --help lists every subcommand' '
	expect_ok --help &&
	for c in $SUBCOMMANDS; do
		grep -qw -- "$c" "$OUT" || { say "--help does not list $c"; return 1; }
	done
'

test_expect_success 'unknown subcommand: exit 2, one error line' '
	expect_error 2 frobnicate -c x.ini &&
	err_matches "frobnicate"
'

test_expect_success 'no subcommand: exit 2, usage on stderr, nothing on stdout' '
	expect_exit 2 &&
	[ ! -s "$OUT" ] && [ -s "$ERR" ]
'

test_expect_success 'unknown option: exit 2, one error line' '
	make_config A B &&
	expect_error 2 status -c "$CONF" --no-such-option
'

test_expect_success 'missing argument: exit 2, one error line' '
	expect_error 2 get -c "$CONF" A
'

test_expect_success 'start: every agent answers; status exit 0, a line per agent' '
	start_cluster &&
	expect_ok status -c "$CONF" &&
	expect_eq "$(grep -Ec "^[AB] " "$OUT")" 2 "status lines" &&
	grep -q "A" "$OUT" && grep -q "B" "$OUT"
'

test_expect_success 'put then get prints the value' '
	expect_ok put -c "$CONF" A color blue &&
	expect_ok get -c "$CONF" A color &&
	expect_eq "$(cat "$OUT")" blue "get A color"
'

test_expect_success 'put overwrites' '
	expect_ok put -c "$CONF" A color green &&
	expect_ok get -c "$CONF" A color &&
	expect_eq "$(cat "$OUT")" green "get A color"
'

test_expect_success 'keys are per agent: absent on B' '
	expect_error 1 get -c "$CONF" B color
'

test_expect_success 'get of an absent key: exit 1' '
	expect_exit 1 get -c "$CONF" A nosuchkey &&
	[ ! -s "$OUT" ]
'

test_expect_success 'del removes the key' '
	expect_ok del -c "$CONF" A color &&
	expect_exit 1 get -c "$CONF" A color
'

test_expect_success 'add on an absent key counts from 0 and prints the new value' '
	expect_ok add -c "$CONF" A n 5 &&
	expect_eq "$(cat "$OUT")" 5 "add A n 5" &&
	expect_ok add -c "$CONF" A n -7 &&
	expect_eq "$(cat "$OUT")" -2 "add A n -7" &&
	expect_ok get -c "$CONF" A n &&
	expect_eq "$(cat "$OUT")" -2 "get A n"
'

test_expect_success 'add on a value that is not an integer: exit 1, one clear line, value kept' '
	expect_ok put -c "$CONF" A word hello &&
	expect_error 1 add -c "$CONF" A word 1 &&
	err_matches "integer|number|numeric" &&
	expect_ok get -c "$CONF" A word &&
	expect_eq "$(cat "$OUT")" hello "get A word"
'

test_expect_success 'add that would overflow int64: exit 1, value kept' '
	expect_ok put -c "$CONF" A big 9223372036854775807 &&
	expect_error 1 add -c "$CONF" A big 1 &&
	expect_ok get -c "$CONF" A big &&
	expect_eq "$(cat "$OUT")" 9223372036854775807 "get A big"
'

test_expect_success 'put VALUE "-" reads the value from stdin (multi-line, 1 MiB)' '
	head -c 786432 /dev/urandom | base64 >value.txt &&
	cs put -c "$CONF" B blob - <value.txt &&
	cs get -c "$CONF" B blob >got.txt &&
	{ cmp value.txt got.txt ||
	  { printf "\n" >>value.txt && cmp value.txt got.txt; }; }
'

# get prints the value followed by a newline.
test_expect_success 'put "-" with binary bytes (NUL, no newline) round-trips' '
	printf "a\000b\377c" >bin.val &&
	cs put -c "$CONF" B bin - <bin.val &&
	cs get -c "$CONF" B bin >bin.got &&
	printf "a\000b\377c\n" >bin.nl &&
	{ cmp -s bin.val bin.got || cmp bin.nl bin.got; }
'

test_expect_success 'put "-" over 16 MiB: refused with one line, nothing stored' '
	head -c 16777217 /dev/zero >huge.val &&
	cs put -c "$CONF" B huge - <huge.val >"$OUT" 2>"$ERR"; RC=$?;
	[ $RC -eq 1 ] || [ $RC -eq 2 ] || { say "exit $RC"; show_out; return 1; }
	err_is_one_line &&
	expect_exit 1 get -c "$CONF" B huge
'

test_expect_success 'transfer moves the amount from SRC to DST' '
	expect_ok put -c "$CONF" A bal 100 &&
	expect_ok put -c "$CONF" B bal 50 &&
	expect_ok transfer -c "$CONF" A:bal B:bal 30 &&
	expect_eq "$(bal A)" 70 "A bal" &&
	wait_bal B 80 &&
	expect_eq "$(total)" 150 "total"
'

test_expect_success 'transfer to another key of the destination' '
	expect_ok transfer -c "$CONF" A:bal B:savings 20 &&
	wait_for 10 eval "[ \"\$(cs get -c \$CONF B savings)\" = 20 ]" &&
	expect_eq "$(bal A)" 50 "A bal"
'

test_expect_success 'channel hold delays delivery, release delivers' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	expect_eq "$(bal A)" 45 "A bal" &&
	expect_eq "$(bal B)" 80 "B bal while held" &&
	expect_ok channel -c "$CONF" release A B &&
	wait_bal B 85
'

test_expect_success 'status exits non-zero when one agent is down' '
	pid=$(agent_pid B) && [ -n "$pid" ] &&
	kill -TERM $pid &&
	wait_for 10 pid_gone $pid &&
	expect_exit "[1-9]*" status -c "$CONF" &&
	grep -q A "$OUT"
'

test_expect_success 'a command for a stopped agent: exit 1, one line saying it is not running' '
	expect_error 1 get -c "$CONF" B bal &&
	err_matches "running|connect"
'

test_expect_success 'start again brings the missing agent back with its data' '
	start_cluster &&
	expect_ok status -c "$CONF" &&
	expect_eq "$(bal B)" 85 "B bal after restart" &&
	expect_ok get -c "$CONF" B bin &&
	{ cmp -s bin.val "$OUT" || cmp bin.nl "$OUT"; }
'

test_expect_success 'stop: every agent exits; status then exits non-zero' '
	stop_cluster &&
	expect_exit "[1-9]*" status -c "$CONF"
'

test_expect_success 'dump prints KEY<TAB>VALUE lines of the data file' '
	expect_ok dump "$TEST_DIR/A.data" &&
	grep -qx "bal	45" "$OUT" &&
	grep -qx "n	-2" "$OUT" &&
	grep -qx "word	hello" "$OUT" &&
	! grep -q "^color	" "$OUT" &&
	expect_ok dump "$TEST_DIR/B.data" &&
	grep -qx "bal	85" "$OUT" &&
	grep -qx "savings	20" "$OUT"
'

test_expect_success 'dump --json exits 0 and prints JSON naming the keys' '
	expect_ok dump "$TEST_DIR/A.data" --json &&
	grep -q "\"bal\"" "$OUT" &&
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT"
'

test_expect_success 'status --json while all are up is valid JSON' '
	start_cluster &&
	expect_ok status -c "$CONF" --json &&
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT" &&
	stop_cluster
'

test_done

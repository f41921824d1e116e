#!/bin/bash
# The command line agrees with itself (tests/cli-options.py): every option
# a command accepts, found by asking the binary, is listed in its --help;
# every option its --help lists is accepted; every long option is in the
# manual and the command's bash completion; and a short letter means one
# long option in every command that takes it.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$_lib_dir/../.." && pwd)

test_expect_success 'every command: accepted options = listed options, one meaning per letter' '
	python3 "$ROOT/tests/cli-options.py" "$CUTSNAP" "$ROOT" >opts.json
	rc=$?
	python3 - opts.json <<-PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	for p in d["problems"]:
	    print("# " + p)
	print("# %d commands, %d options checked" % (d["commands"], d["options"]))
	# Each of the commands takes a few options at least.
	sys.exit(1 if d["problems"] or d["commands"] < 20 or
	         d["options"] < 2 * d["commands"] else 0)
	PY
	[ $? = 0 ] && [ $rc = 0 ]
'

test_expect_success 'a dropped short form is refused, its long form works' '
	expect_exit 2 agent -n A &&
	err_matches "unknown option .-n." &&
	expect_exit 2 load -k 4 &&
	err_matches "unknown option .-k." &&
	expect_exit 2 agent --name A &&
	err_matches "missing -c CONF"
'

test_expect_success 'a command that talks to no agent refuses --cert' '
	expect_exit 2 ls --cert c -r "$TEST_DIR" &&
	err_matches "unknown option .--cert." &&
	"$CUTSNAP" status --help >help.out &&
	grep -q -- "^--cert NAME" help.out
'

test_done

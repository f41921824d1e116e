#!/bin/bash
# cutsnap check, the one command for monitoring: exit 0 and "ok" on a
# healthy cluster with a recent snapshot; exit 1 naming each problem, in
# text and in JSON, when an agent is down, a channel is stuck (a held
# channel with a transfer queued past --stuck-after), a dead letter is
# open, an agent is fenced and its channel diverged, the repository has no
# complete snapshot or its newest one is older than --max-age.
. "$(dirname "$0")/lib.sh"

export CUTSNAP_SCRYPT_N=1024

# check_json ARGS...: "cutsnap check -c CONF --json ARGS" into $OUT, any
# exit status (in RC).
check_json () {
	cs check -c "$CONF" --json "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# problems_of: the sorted "KIND:WHERE" of the problems in $OUT (WHERE:
# the channel, else the agent, else "-"), space-separated.
problems_of () {
	json_get '" ".join(sorted("%s:%s" % (p["kind"], p["channel"] or
	    p["agent"] or "-") for p in d["problems"]))'
}
# kinds ARGS...: check --json ARGS, then problems_of.
kinds () { check_json "$@"; problems_of; }

# has_problem SPEC ARGS...: check exits 1, its JSON is not ok and lists
# SPEC ("KIND:WHERE") among its problems.
has_problem () {
	local spec=$1
	shift
	check_json "$@"
	case " $(problems_of) " in
	*" $spec "*) [ "$RC" = 1 ] && json_check 'd["ok"] is False' ;;
	*) return 1 ;;
	esac
}

# healthy ARGS...: check exits 0 with no problem.
healthy () {
	check_json "$@" && [ "$RC" = 0 ] &&
	    json_check 'd["ok"] is True and d["problems"] == []'
}

# text_names KIND WHERE ARGS...: the text form exits 1 with a line
# "problem: KIND WHERE: ..." ("problem: KIND: ..." when WHERE is empty)
# and the summary line.
text_names () {
	local kind=$1 where=$2
	shift 2
	expect_exit 1 check -c "$CONF" "$@" &&
	grep -Eq "^problem: $kind${where:+ $where}: ." "$OUT" &&
	grep -Eq "^check: [0-9]+ problems?$" "$OUT" || { show_out; false; }
}

test_expect_success 'setup: A=100 B=100 C=100' '
	make_config A B C &&
	start_cluster &&
	set_balances A=100 B=100 C=100 &&
	wait_channels_settled
'

test_expect_success 'a healthy cluster: exit 0, "check: ok", JSON ok with counts' '
	expect_ok check -c "$CONF" &&
	grep -Eq "^check: ok \(3 agents, 6 channels\)$" "$OUT" &&
	expect_eq "$(grep -c "^problem:" "$OUT")" 0 "problem lines" &&
	expect_ok check -c "$CONF" --json &&
	json_check "(d[\"ok\"] is True and d[\"problems\"] == [] and
	    d[\"checked\"][\"agents\"] == 3 and
	    d[\"checked\"][\"agents_up\"] == 3 and
	    d[\"checked\"][\"channels\"] == 6 and
	    d[\"checked\"][\"newest_snapshot\"] is None)"
'

test_expect_success 'bad usage: exit 2 with one error line; --help lists every option' '
	expect_error 2 check -c "$CONF" --max-age 1h &&
	err_matches "max-age needs -r REPO" &&
	expect_error 2 check -c "$CONF" --stuck-after soon &&
	err_matches "invalid DURATION" &&
	expect_error 2 check &&
	err_matches "missing -c CONF" &&
	expect_ok check --help &&
	for o in --config --repo --max-age --stuck-after --json; do
		grep -q -- "$o" "$OUT" || { say "help lacks $o"; false; } || return 1
	done
'

test_expect_success 'bash completion knows check, its options, and that durations are no files' '
	c="$_lib_dir/../../completion/cutsnap.bash" &&
	complete_words () {
		bash -c "source \"\$1\"; shift; COMP_WORDS=(\"\$@\");
		    COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); _cutsnap;
		    printf \"%s\\n\" \"\${COMPREPLY[@]}\"" _ "$c" "$@" |
		    sed "/^$/d" | sort | tr "\n" " "
	} &&
	expect_eq "$(complete_words cutsnap chec)" "check " "command" &&
	expect_eq "$(complete_words cutsnap check --st)" "--stuck-after " "option" &&
	expect_eq "$(complete_words cutsnap check --max-age "")" "" "--max-age value"
'

test_expect_success 'a repository without a complete snapshot: no_snapshot' '
	expect_ok init -r "$TEST_DIR/empty" &&
	has_problem "no_snapshot:-" -r "$TEST_DIR/empty" &&
	json_check "d[\"checked\"][\"newest_snapshot\"] is None" &&
	text_names no_snapshot "" -r "$TEST_DIR/empty"
'

test_expect_success 'a missing repository: the problem "repository", exit 1' '
	has_problem "repository:-" -r "$TEST_DIR/nowhere" &&
	json_check "\"nowhere\" in d[\"problems\"][0][\"detail\"]"
'

test_expect_success 'a fresh snapshot passes --max-age 1h and names its id' '
	take_snapshot &&
	ID=$SNAP_ID &&
	expect_ok check -c "$CONF" -r "$REPO" --max-age 1h --json &&
	json_check "(d[\"ok\"] is True and
	    d[\"checked\"][\"newest_snapshot\"][\"id\"] == $ID and
	    d[\"checked\"][\"newest_snapshot\"][\"age_s\"] < 3600)" &&
	expect_ok check -c "$CONF" -r "$REPO" &&
	grep -Eq "newest snapshot $ID started [0-9]+s ago" "$OUT"
'

test_expect_success 'an encrypted repository is checked without its password' '
	printf "%s\n" "correct horse" >pw &&
	expect_ok init -r "$TEST_DIR/enc" --encrypt --password-file pw &&
	expect_ok snapshot -c "$CONF" -r "$TEST_DIR/enc" --password-file pw &&
	(unset CUTSNAP_PASSWORD CUTSNAP_PASSWORD_FILE &&
	    expect_ok check -c "$CONF" -r "$TEST_DIR/enc" --max-age 1h --json \
	    </dev/null) &&
	json_check "d[\"ok\"] is True and d[\"checked\"][\"newest_snapshot\"][\"id\"] == 1"
'

test_expect_success 'the snapshot grows older than --max-age 1s: snapshot_too_old' '
	wait_for 15 has_problem "snapshot_too_old:-" -r "$REPO" --max-age 1s &&
	expect_eq "$(kinds -r "$REPO" --max-age 1s)" "snapshot_too_old:-" "problems" &&
	json_check "\"snapshot $ID \" in d[\"problems\"][0][\"detail\"]" &&
	text_names snapshot_too_old "" -r "$REPO" --max-age 1s
'

test_expect_success 'a held channel with a transfer queued: fine at first, stuck past --stuck-after' '
	expect_ok channel -c "$CONF" hold A B &&
	expect_ok transfer -c "$CONF" A:bal B:bal 5 &&
	healthy &&
	wait_for 15 has_problem "stuck:A>B" --stuck-after 1s &&
	expect_eq "$(kinds --stuck-after 1s)" "stuck:A>B" "problems" &&
	json_check "(d[\"problems\"][0][\"agent\"] == \"A\" and
	    \"held\" in d[\"problems\"][0][\"detail\"])" &&
	text_names stuck "A>B" --stuck-after 1s
'

test_expect_success 'released, the transfer arrives and the channel is no longer stuck' '
	expect_ok channel -c "$CONF" release A B &&
	wait_bal B 105 &&
	wait_channels_settled &&
	wait_for 15 healthy --stuck-after 1s
'

test_expect_success 'an agent stopped: agent_down, its channels not reported again' '
	p=$(agent_pid C) && kill "$p" &&
	wait_for 15 pid_gone "$p" &&
	expect_eq "$(kinds)" "agent_down:C" "problems" &&
	json_check "(d[\"checked\"][\"agents_up\"] == 2 and
	    d[\"problems\"][0][\"agent\"] == \"C\" and
	    d[\"problems\"][0][\"channel\"] is None)" &&
	text_names agent_down C
'

test_expect_success 'the agent started again: healthy once its channels reconnect' '
	expect_ok start -c "$CONF" &&
	wait_for 30 healthy
'

test_expect_success 'a transfer to a key holding text: dead_letters on B' '
	expect_ok put -c "$CONF" B word hello &&
	expect_ok transfer -c "$CONF" A:bal B:word 5 &&
	wait_for 15 has_problem "dead_letters:B" &&
	json_check "d[\"checked\"][\"dead_letters\"] == 1" &&
	text_names dead_letters B
'

test_expect_success 'A restored alone from an older snapshot: fenced, A>B diverged' '
	expect_ok transfer -c "$CONF" A:bal B:bal 10 &&
	wait_bal B 115 &&
	wait_channels_settled &&
	p=$(agent_pid A) && kill -9 "$p" &&
	wait_for 15 pid_gone "$p" &&
	rm -f A.data &&
	expect_ok restore -r "$REPO" "$ID" -c "$CONF" --agent A &&
	expect_ok start -c "$CONF" &&
	wait_for 15 has_problem "diverged:A>B" &&
	has_problem "fenced:A" &&
	text_names fenced A &&
	grep -Eq "^problem: diverged A>B: ." "$OUT" &&
	grep -Eq "^problem: dead_letters B: ." "$OUT"
'

test_done

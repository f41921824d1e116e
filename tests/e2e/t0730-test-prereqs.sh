#!/bin/bash
# The test library's prerequisites and seed (lib.sh), run on small scripts
# of its own: a script-level test_require skips the whole script with the
# missing name, a case's prerequisite skips that case, lazy prerequisites
# are evaluated once, the seed is printed and replays the same choices,
# and the Makefile starts radosgw only for a script that declares S3.
. "$(dirname "$0")/lib.sh"

TOP=$(cd "$_lib_dir/../.." && pwd)

# child NAME BODY: a test script NAME.sh in TEST_DIR sourcing lib.sh, then
# BODY.
child () {
	printf '#!/bin/bash\n. "%s/lib.sh"\n%s\n' "$_lib_dir" "$2" >"$TEST_DIR/$1.sh"
}

# run_child NAME [VAR=VALUE...]: run it with only the given test settings
# (none inherited from this run); its output in $OUT, status in RC.
run_child () {
	local n=$1
	shift
	env -u CUTSNAP_TEST_EXPENSIVE -u CUTSNAP_TEST_SEED -u CI \
	    -u CUTSNAP_S3_ENV "$@" bash "$TEST_DIR/$n.sh" >"$OUT" 2>"$ERR"
	RC=$?
}

out_has () {
	grep -qxF -- "$1" "$OUT" && return 0
	say "no line '$1' in the output:"
	show_out
	return 1
}

test_expect_success 'test_require EXPENSIVE without CUTSNAP_TEST_EXPENSIVE: the script is skipped, nothing runs' '
	child costly "test_require EXPENSIVE
test_expect_success \"the long one\" \"touch $TEST_DIR/costly.ran\"
test_done" &&
	run_child costly &&
	expect_eq "$RC" 0 "exit status" &&
	out_has "1..0 # SKIP skip all of costly (missing EXPENSIVE)" &&
	[ ! -e costly.ran ] &&
	expect_eq "$(grep -c "^ok" "$OUT")" 0 "cases reported"
'

test_expect_success 'with CUTSNAP_TEST_EXPENSIVE=1 it runs' '
	run_child costly CUTSNAP_TEST_EXPENSIVE=1 &&
	expect_eq "$RC" 0 "exit status" &&
	out_has "ok 1 - the long one" && out_has "1..1" &&
	[ -e costly.ran ]
'

test_expect_success 'prove reports the skipped script with the missing prerequisite' '
	(cd "$TEST_DIR" && env -u CUTSNAP_TEST_EXPENSIVE \
	    prove -v --exec bash costly.sh) >"$OUT" 2>&1 &&
	grep -q "skipped: skip all of costly (missing EXPENSIVE)" "$OUT" ||
	    { cat "$OUT"; false; }
'

test_expect_success 'a case runs with its prerequisites, is skipped naming the missing one' '
	child cases "test_set_prereq FOO
test_expect_success FOO \"with FOO\" true
test_expect_success BAR \"with BAR\" false
test_expect_success !FOO \"without FOO\" false
test_expect_success FOO,!BAR \"FOO but not BAR\" true
test_expect_success FOO,BAR \"FOO and BAR\" false
test_expect_success \"no prerequisite\" true
test_done" &&
	run_child cases &&
	expect_eq "$RC" 0 "exit status" &&
	out_has "ok 1 - with FOO" &&
	out_has "ok 2 # skip with BAR (missing BAR)" &&
	out_has "ok 3 # skip without FOO (missing !FOO)" &&
	out_has "ok 4 - FOO but not BAR" &&
	out_has "ok 5 # skip FOO and BAR (missing BAR)" &&
	out_has "ok 6 - no prerequisite" &&
	out_has "1..6"
'

test_expect_success 'a case whose prerequisites hold still fails when its commands do' '
	child failing "test_set_prereq FOO
test_expect_success FOO \"fails\" false
test_done" &&
	run_child failing &&
	expect_eq "$RC" 1 "exit status" &&
	out_has "not ok 1 - fails"
'

test_expect_success 'a lazy prerequisite is evaluated once, true or false' '
	child lazy "test_lazy_prereq YES \"echo y >>$TEST_DIR/yes.count\"
test_lazy_prereq NO \"echo n >>$TEST_DIR/no.count; false\"
for i in 1 2 3; do
	test_have_prereq YES && echo yes-\$i
	test_have_prereq NO || echo no-\$i
done
test_expect_success YES,!NO \"lazy\" true
test_done" &&
	run_child lazy &&
	expect_eq "$RC" 0 "exit status" &&
	expect_eq "$(grep -c "^yes-[123]$" "$OUT")" 3 "YES answers" &&
	expect_eq "$(grep -c "^no-[123]$" "$OUT")" 3 "NO answers" &&
	expect_eq "$(wc -l <yes.count)" 1 "evaluations of YES" &&
	expect_eq "$(wc -l <no.count)" 1 "evaluations of NO" &&
	out_has "ok 1 - lazy"
'

test_expect_success 'test_require after the first case is a mistake the script is stopped for' '
	child late "test_expect_success \"first\" true
test_require ROOT
test_done" &&
	run_child late &&
	expect_eq "$RC" 1 "exit status" &&
	out_has "Bail out! late: test_require ROOT after the first case"
'

test_expect_success 'lib-s3.sh in a script that did not declare S3: a failure, no server started' '
	child nos3 ". \"$_lib_dir/lib-s3.sh\"
test_done" &&
	run_child nos3 &&
	expect_eq "$RC" 1 "exit status" &&
	out_has "not ok 1 - nos3 sources lib-s3.sh without test_require S3 at its top" &&
	! grep -q radosgw "$ERR"
'

# uses_undeclared PATTERN PREREQ: print the scripts matching PATTERN that
# do not declare PREREQ (one grep each over every script); USERS counts
# all that match. Not in $(...): USERS is set in this shell.
uses_undeclared () {
	local users declared
	users=$(grep -lE "$1" "$_lib_dir"/t[0-9]*.sh | sort)
	declared=$(grep -lE "^test_require .*\b$2\b" "$_lib_dir"/t[0-9]*.sh | sort)
	USERS=$(echo "$users" | grep -c .)
	comm -23 <(echo "$users") <(echo "$declared")
}

test_expect_success 'every script that uses the S3 server or namespaces declares it' '
	uses_undeclared "^\. .*lib-s3\.sh" S3 >bad.s3 && s3=$USERS &&
	expect_eq "$(cat bad.s3)" "" "scripts sourcing lib-s3.sh without test_require S3" &&
	uses_undeclared "^[[:space:]]*netns_hub" NETNS >bad.ns && ns=$USERS &&
	expect_eq "$(cat bad.ns)" "" "scripts calling netns_hub without test_require NETNS" &&
	say "$s3 S3 scripts, $ns NETNS scripts" &&
	[ "$s3" -ge 10 ] && [ "$ns" -ge 3 ]
'

# make_test_n E2E [MAKE ARGS...]: the prove command `make test` would run
# for E2E (a dry run), its continued lines joined.
make_test_n () {
	local e=$1
	shift
	make -s -n -C "$TOP" test E2E="$e" "$@" 2>/dev/null |
	    sed -e :a -e "/\\\\\$/N; s/\\\\\n//; ta" | grep "prove "
}

test_expect_success 'make test starts radosgw for a script that declares S3, not for one that does not' '
	make_test_n tests/e2e/t0380-s3-repo.sh >s3.cmd &&
	grep -q "tests/s3/radosgw.sh run prove" s3.cmd &&
	make_test_n tests/e2e/t0001-cli-basics.sh >plain.cmd &&
	grep -q "prove " plain.cmd &&
	! grep -q radosgw plain.cmd
'

test_expect_success 'make test runs the EXPENSIVE scripts with a fixed seed, overridable' '
	make_test_n tests/e2e/t0030-torture.sh >exp.cmd &&
	grep -q "CUTSNAP_TEST_EXPENSIVE=1 CUTSNAP_TEST_SEED=1 " exp.cmd &&
	make_test_n tests/e2e/t0030-torture.sh CUTSNAP_TEST_SEED=77 |
	    grep -q "CUTSNAP_TEST_SEED=77 "
'

test_expect_success 'the seed is printed, and the same seed makes the same choices' '
	child seeded "echo \"choices \$RANDOM \$RANDOM \$RANDOM\"
test_done" &&
	run_child seeded CUTSNAP_TEST_SEED=123 &&
	expect_eq "$RC" 0 "exit status" &&
	out_has "# seed 123 (CUTSNAP_TEST_SEED=123 replays it)" &&
	grep "^choices " "$OUT" >first &&
	run_child seeded CUTSNAP_TEST_SEED=123 &&
	grep "^choices " "$OUT" >second &&
	cmp first second &&
	run_child seeded CUTSNAP_TEST_SEED=124 &&
	grep "^choices " "$OUT" >other &&
	! cmp -s first other
'

test_expect_success 'under CI the default seed is fixed; a seed that is not a number is refused' '
	run_child seeded CI=true &&
	out_has "# seed 1 (CUTSNAP_TEST_SEED=1 replays it)" &&
	run_child seeded CUTSNAP_TEST_SEED=12x &&
	expect_eq "$RC" 1 "exit status" &&
	grep -q "^Bail out! CUTSNAP_TEST_SEED must be a number" "$OUT"
'

test_done

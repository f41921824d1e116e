#!/bin/bash
# Dead letters under kill -9: a receiver killed while it records a dead
# letter consumes the resent message exactly once after its restart; an
# agent killed while it resolves one ends either resolved with the effect
# or still open without it, never half; and the money adds up.
. "$(dirname "$0")/lib.sh"

ROUNDS=6

# dead_field KEY EXPR: EXPR of the one dead letter of B on KEY (bound to x),
# from deadletter list --all --json; fails unless exactly one exists.
dead_field () {
	cs deadletter -c "$CONF" list B --all --json >"$TEST_DIR/.dl" &&
	json_get "[x for x in d[\"agents\"][0][\"dead_letters\"] if x[\"key\"] == \"$1\"]" "$TEST_DIR/.dl" >"$TEST_DIR/.one" &&
	json_check "len(d) == 1" "$TEST_DIR/.one" &&
	json_get "(lambda x: $2)(d[0])" "$TEST_DIR/.one"
}

kill_b () {
	local p
	p=$(agent_pid B) && [ -n "$p" ] && kill -KILL "$p" &&
	    wait_for 10 pid_gone "$p"
}

# Every message A sent to B is acknowledged, so B consumed it.
a_acked () {
	cs status -c "$CONF" --json >"$TEST_DIR/.st" &&
	json_check "all(o[\"acked\"] == o[\"sent\"] for a in d if a[\"agent\"] == \"A\" for o in a[\"out\"])" "$TEST_DIR/.st"
}

test_expect_success 'setup: A=1000' '
	make_config A B &&
	start_cluster &&
	set_balances A=1000 B=0
'

test_expect_success "kill -9 while dead letters are recorded and resolved ($ROUNDS rounds)" '
	retried=0 refunded=0 checked=0
	for r in $(seq 1 $ROUNDS); do
		k=k$r &&
		expect_ok put -c "$CONF" B $k text &&
		expect_ok transfer -c "$CONF" A:bal B:$k $r &&
		kill_b &&
		start_cluster &&
		wait_for 20 a_acked &&
		seq=$(dead_field $k "x[\"seq\"]") &&
		expect_eq "$(dead_field $k "x[\"state\"]")" open "state of $k" || return 1
		if [ $((r % 2)) -eq 0 ]; then
			expect_ok put -c "$CONF" B $k 0 &&
			{ cs deadletter -c "$CONF" retry B A "$seq" >/dev/null 2>&1 & } &&
			kill_b && start_cluster || return 1
			state=$(dead_field $k "x[\"state\"]") &&
			v=$(cs get -c "$CONF" B $k) || return 1
			case $state/$v in
			retried/$r) retried=$((retried + 1)) ;;
			open/0) expect_ok deadletter -c "$CONF" retry B A "$seq" &&
				expect_eq "$(cs get -c "$CONF" B $k)" $r "$k after retry" || return 1 ;;
			*) say "round $r: state $state with $k=$v"; return 1 ;;
			esac
		else
			{ cs deadletter -c "$CONF" refund B A "$seq" >/dev/null 2>&1 & } &&
			kill_b && start_cluster || return 1
			state=$(dead_field $k "x[\"state\"]") || return 1
			case $state in
			refunded) refunded=$((refunded + 1)) ;;
			open) expect_ok deadletter -c "$CONF" refund B A "$seq" || return 1 ;;
			*) say "round $r: state $state"; return 1 ;;
			esac
			expect_error 1 deadletter -c "$CONF" refund B A "$seq" || return 1
		fi
		checked=$((checked + 1))
	done
	say "rounds $checked: resolved before the kill: $retried retries, $refunded refunds"
	expect_eq $checked $ROUNDS "rounds checked"
'

test_expect_success 'every dead letter was consumed once and resolved once' '
	cs deadletter -c "$CONF" list B --all --json >"$TEST_DIR/.dl" &&
	json_check "sorted(x[\"key\"] for x in d[\"agents\"][0][\"dead_letters\"]) == sorted(\"k%d\" % r for r in range(1, $ROUNDS + 1))" "$TEST_DIR/.dl" &&
	json_check "all(x[\"state\"] != \"open\" for x in d[\"agents\"][0][\"dead_letters\"])" "$TEST_DIR/.dl"
'

# Odd rounds were refunded to A:bal, even ones retried into B:kR.
test_expect_success 'money is conserved: A bal + the retried keys = 1000' '
	want=1000 s=0
	for r in $(seq 2 2 $ROUNDS); do
		want=$((want - r))
		s=$((s + $(cs get -c "$CONF" B k$r)))
	done
	wait_bal A $want &&
	expect_eq $(( $(bal A) + s )) 1000 "A bal + retried"
'

test_expect_success 'a refund queued on a held channel survives kill -9 of its agent and arrives once' '
	a0=$(bal A) &&
	expect_ok put -c "$CONF" B kx text &&
	expect_ok transfer -c "$CONF" A:bal B:kx 7 &&
	wait_for 20 a_acked &&
	seq=$(dead_field kx "x[\"seq\"]") &&
	expect_ok channel -c "$CONF" hold B A &&
	expect_ok deadletter -c "$CONF" refund B A "$seq" &&
	expect_eq "$(bal A)" $((a0 - 7)) "A bal while the refund is held" &&
	kill_b &&
	start_cluster &&
	wait_bal A "$a0" &&
	expect_eq "$(dead_field kx "x[\"state\"]")" refunded "state after the restart" &&
	expect_ok status -c "$CONF" --json &&
	json_check "all(o[\"acked\"] == o[\"sent\"] for a in d if a[\"agent\"] == \"B\" for o in a[\"out\"])" &&
	expect_eq "$(bal A)" "$a0" "A bal once the refund was acknowledged"
'

test_done

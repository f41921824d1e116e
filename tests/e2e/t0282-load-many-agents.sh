#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# `load` reads every agent's status whatever its length: with 80 agents
# in a full mesh (79 channels each way per agent) it once read each reply
# into 4,200 bytes, never saw the channels drain and gave up after 60 s.
# 80 agents each connecting to 79 peers take more than start's default
# 10 s to answer under ASan with two test scripts at a time.
. "$(dirname "$0")/lib.sh"
test_require EXPENSIVE

NAMES=()
for i in $(seq -w 1 80); do
	NAMES+=("N$i")
done

test_expect_success 'setup: 80 agents, full mesh' '
	make_config "${NAMES[@]}" &&
	start_cluster --timeout 60 &&
	expect_ok status -c "$CONF" --json &&
	json_check "(len(d) == 80 and all(len(a[\"out\"]) == 79 and
	    len(a[\"in\"]) == 79 for a in d))"
'

test_expect_success 'load drains every channel and conserves the total' '
	expect_ok load -c "$CONF" -s 2 --clients 4 --json &&
	json_check "(d[\"conserved\"] is True and d[\"failures\"] == 0 and
	    d[\"transfers\"] > 0 and d[\"total_before\"] == 80 * 1000000)" &&
	expect_eq "$(total)" $((80 * 1000000)) "total after the deposits"
'

test_done

#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# cutsnap load counts a transfer refused for insufficient funds by the
# agent's reply code (CONFLICT), not by its words: with balances far below
# the amounts, refusals are counted as insufficient and none as a failure.
. "$(dirname "$0")/lib.sh"

test_expect_success 'setup: A and B with one unit each' '
	make_config A B &&
	start_cluster &&
	set_balances A=1 B=1
'

test_expect_success 'load: the refusals are insufficient, not failures; total conserved' '
	expect_ok load -c "$CONF" -s 1 --clients 2 --json &&
	json_check "d[\"insufficient\"] > 0" &&
	json_check "d[\"failures\"] == 0" &&
	json_check "d[\"total_before\"] == d[\"total_after\"] == 2" &&
	expect_eq "$(total)" 2 "live total"
'

test_expect_success 'transfer: the same one-line message for the refusal, exit 1' '
	expect_error 1 transfer -c "$CONF" A:bal B:bal 1000 &&
	err_is_one_line &&
	err_matches "^cutsnap: transfer: insufficient funds: A:bal is [0-9]+, transfer needs 1000$"
'

test_done

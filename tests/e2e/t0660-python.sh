#!/bin/bash
# The Python package (python/cutsnap) against real agents: its own unit
# tests, its cluster tests (keys, transactions, conflicts, versions), what
# it writes read back by the CLI and the other way round, installed by pip
# from the clone, a stopped agent refused in one line, and TCP + mutual TLS
# with the client certificate as the CLI uses it.
. "$(dirname "$0")/lib.sh"
. "$_lib_dir/lib-tls.sh"

PYDIR=$(cd "$_lib_dir/../../python" && pwd)
PYTESTS=$(cd "$_lib_dir/../python" && pwd)

# py ARGS...: python3 with the package of this clone, bounded in time.
py () { PYTHONPATH=$PYDIR timeout 60 python3 "$@"; }

# ran_ok FILE MIN: unittest's output in FILE says OK after at least MIN
# tests, none skipped.
ran_ok () {
	local n
	n=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$1")
	[ -n "$n" ] && [ "$n" -ge "$2" ] || { say "ran ${n:-no} tests"; cat "$1" >&2; return 1; }
	grep -qx 'OK' "$1" || { cat "$1" >&2; return 1; }
}

test_expect_success 'the package unit tests pass (encoding, replies, config)' '
	py "$PYTESTS/test_wire.py" >unit.out 2>&1 &&
	ran_ok unit.out 13
'

test_expect_success 'setup: agents A and B' '
	make_config A B &&
	start_cluster
'

test_expect_success 'the package cluster tests pass against A and B' '
	CUTSNAP_TEST_CONFIG=$CONF py "$PYTESTS/test_agent.py" -v \
	    >agent.out 2>&1 &&
	ran_ok agent.out 9
'

test_expect_success 'Python writes what the CLI reads, and reads what it writes' '
	py -c "import cutsnap,sys; c=cutsnap.connect(sys.argv[1], \"A\"); c.put(\"from-py\", \"42\"); c.add(\"from-py\", 1)" "$CONF" &&
	expect_eq "$(cs get -c "$CONF" A from-py)" 43 "CLI get" &&
	cs put -c "$CONF" B from-cli hello >/dev/null &&
	expect_eq "$(py -c "import cutsnap,sys; print(cutsnap.connect(sys.argv[1], \"B\").get(\"from-cli\").decode())" "$CONF")" hello "Python get"
'

test_expect_success 'pip installs the package from the clone, without the network' '
	cp -r "$PYDIR" pysrc &&
	python3 -m pip install --quiet --no-build-isolation --no-index \
	    --target site ./pysrc >pip.out 2>&1 || { cat pip.out >&2; return 1; }
	where=$(cd / && PYTHONPATH=$TEST_DIR/site timeout 60 python3 -c "import cutsnap,sys; c=cutsnap.connect(sys.argv[1], \"A\"); c.put(\"pip\", \"1\"); print(cutsnap.__file__)" "$CONF") &&
	case $where in "$TEST_DIR"/site/*) ;; *) say "imported from $where"; return 1 ;; esac &&
	expect_eq "$(cs get -c "$CONF" A pip)" 1 "value put by the installed package"
'

test_expect_success 'a stopped agent: cutsnap.Error in one line naming it' '
	stop_cluster &&
	py -c "
import cutsnap, sys
try:
    cutsnap.connect(sys.argv[1], \"A\")
except cutsnap.Error as e:
    print(e)
    sys.exit(3)
" "$CONF" >err.out 2>&1
	expect_eq $? 3 "exit status" &&
	expect_eq "$(wc -l <err.out)" 1 "lines" &&
	grep -q "agent A is not running" err.out
'

test_expect_success 'TCP + mutual TLS: the client certificate of tls_dir, CN checked' '
	ports=$(free_ports 1) && [ -n "$ports" ] &&
	mkdir tcp && cd tcp && TEST_DIR=$PWD make_tls_config A=127.0.0.1:$ports B &&
	CONF=$PWD/cluster.ini && cd .. &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	py -c "import cutsnap,sys; c=cutsnap.connect(sys.argv[1], \"A\"); c.put(\"tls\", \"yes\"); print(c.get(\"tls\").decode())" "$CONF" >tls.out 2>&1 &&
	expect_eq "$(cat tls.out)" yes "over TLS" &&
	expect_eq "$(cs get -c "$CONF" A tls)" yes "CLI get"
'

test_expect_success 'TLS: an agent certificate as the client is refused, nothing written' '
	CUTSNAP_CLIENT_CERT=B py -c "
import cutsnap, sys
try:
    c = cutsnap.connect(sys.argv[1], \"A\")
    c.put(\"tls\", \"no\")
except cutsnap.Error as e:
    print(e)
    sys.exit(3)
" "$CONF" >deny.out 2>&1
	expect_eq $? 3 "exit status" &&
	grep -q "may not send client requests" deny.out &&
	expect_eq "$(cs get -c "$CONF" A tls)" yes "value unchanged" &&
	stop_cluster
'

test_done

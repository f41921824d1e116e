#!/bin/bash
# run.sh [N] - the orders example end to end: three agents (orders,
# inventory, billing) and their services; N orders placed (default 200);
# a snapshot taken under load; a random agent or service killed with -9
# and restarted; everything stopped, the snapshot restored, the services
# started again to continue; check.py proves every order placed,
# reserved and invoiced exactly once.  Its JSON is the last line.
#
# Environment: VICTIM (what to kill: agent:NAME or service:NAME, default
# one at random), CUTSNAP (the binary, default cutsnap in PATH), DIR (the
# working directory, default a new temporary one), INVENTORY_CFLAGS (how
# to build inventory.c, default $(pkg-config --cflags --libs cutsnap)).
set -eu

N=${1:-200}
here=$(cd "$(dirname "$0")" && pwd)
CUTSNAP=${CUTSNAP:-cutsnap}
DIR=${DIR:-$(mktemp -d /tmp/orders.XXXXXX)}
export PYTHONPATH=$here/../../python${PYTHONPATH:+:$PYTHONPATH}
CONF=$DIR/cluster.ini
REPO=$DIR/repo
PIDS=""

say () { printf 'run.sh: %s\n' "$*" >&2; }

cleanup () {
	local p
	for p in $PIDS; do
		kill "$p" 2>/dev/null || true
	done
	"$CUTSNAP" stop -c "$CONF" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# count AGENT KEY: the integer KEY of AGENT (0 when absent).
count () {
	python3 -c 'import cutsnap, sys
print(int(cutsnap.connect(sys.argv[1], sys.argv[2]).get(sys.argv[3]) or 0))' \
	    "$CONF" "$1" "$2"
}

# wait_count AGENT KEY MIN SECONDS: until KEY of AGENT is at least MIN.
wait_count () {
	local end=$((SECONDS + $4))
	until [ "$(count "$1" "$2" 2>/dev/null || echo 0)" -ge "$3" ]; do
		[ $SECONDS -lt $end ] || { say "$1 $2 below $3 after $4 s"; return 1; }
		sleep 0.2
	done
}

start_service () {
	case $1 in
	inventory) "$DIR/inventory" "$CONF" 2>>"$DIR/inventory.log" & ;;
	billing) python3 "$here/billing.py" "$CONF" 2>>"$DIR/billing.log" & ;;
	esac
	eval "PID_$1=$!"
	PIDS="$PIDS $!"
}

# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -O2 -o "$DIR/inventory" "$here/inventory.c" \
    ${INVENTORY_CFLAGS:-$(pkg-config --cflags --libs cutsnap)}
cat >"$CONF" <<CONF
[cluster]
run_dir = run
channels = orders>inventory inventory>billing
[agent orders]
data = orders.data
[agent inventory]
data = inventory.data
[agent billing]
data = billing.data
CONF
"$CUTSNAP" start -c "$CONF" >/dev/null
start_service inventory
start_service billing
python3 "$here/orders.py" "$CONF" "$N" 2>>"$DIR/orders.log" &
ORDERS=$!
PIDS="$PIDS $ORDERS"

say "snapshot under load, once a third of the orders are reserved"
wait_count inventory reserved.count $((N / 3)) 120
"$CUTSNAP" snapshot -c "$CONF" -r "$REPO" --json >"$DIR/snapshot.json"
SNAP=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' \
    "$DIR/snapshot.json")

victims="agent:orders agent:inventory agent:billing service:inventory service:billing"
victim=${VICTIM:-$(echo $victims | tr ' ' '\n' | shuf -n 1)}
case " $victims " in
*" $victim "*) ;;
*) say "VICTIM must be one of: $victims"; exit 2 ;;
esac
say "kill -9 $victim, then start it again"
case $victim in
agent:*)
	"$CUTSNAP" status -c "$CONF" --json >"$DIR/status.json"
	pid=$(python3 -c 'import json, sys
print([a["pid"] for a in json.load(open(sys.argv[1]))
       if a["agent"] == sys.argv[2]][0])' "$DIR/status.json" "${victim#agent:}")
	kill -9 "$pid"
	"$CUTSNAP" start -c "$CONF" >/dev/null ;;
service:*)
	eval "kill -9 \$PID_${victim#service:}"
	start_service "${victim#service:}" ;;
esac

wait "$ORDERS"
wait_count billing invoices.count "$N" 120

say "stop everything, restore snapshot $SNAP, continue from there"
for p in $PIDS; do
	kill "$p" 2>/dev/null || true
done
PIDS=""
"$CUTSNAP" stop -c "$CONF" >/dev/null
"$CUTSNAP" restore -c "$CONF" -r "$REPO" "$SNAP" -q
"$CUTSNAP" start -c "$CONF" >/dev/null
start_service inventory
start_service billing
python3 "$here/orders.py" "$CONF" "$N" 2>>"$DIR/orders.log"
python3 "$here/check.py" "$CONF" "$N" 120

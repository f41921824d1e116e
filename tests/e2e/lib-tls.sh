# lib-tls.sh - helpers of the TCP + TLS tests (sourced after lib.sh; not
# named t*.sh, so the suite does not run it as a test).

. "$_lib_dir/../ports.sh"

# make_tls_config NAME[=HOST:PORT]...: TEST_DIR/cluster.ini with tls_dir
# tls; an agent given an address listens there, the others on run_dir.
make_tls_config () {
	local a
	CONF=$TEST_DIR/cluster.ini
	REPO=$TEST_DIR/repo
	AGENTS=""
	{
		echo "[cluster]"
		echo "run_dir = run"
		echo "tls_dir = tls"
		for a in "$@"; do
			echo ""
			echo "[agent ${a%%=*}]"
			echo "data = ${a%%=*}.data"
			case $a in *=*) echo "addr = ${a#*=}" ;; esac
		done
	} >"$CONF"
	for a in "$@"; do
		AGENTS="$AGENTS ${a%%=*}"
	done
	AGENTS=${AGENTS# }
}

# log_has NAME REGEX: agent NAME's log (run/NAME.log) has a matching line.
log_has () { grep -Eq -- "$2" "$TEST_DIR/run/$1.log"; }

# log_count NAME REGEX: how many lines of NAME's log match.
# (grep -c prints 0 but fails when none does: that is no failure here.)
log_count () { grep -Ec -- "$2" "$TEST_DIR/run/$1.log" || true; }

# channels_up N [CS...]: status --json shows exactly N channel ends, all up
# (CS: the command to run cutsnap with, default cs).
channels_up () {
	local n=$1
	shift
	"${@:-cs}" status -c "$CONF" --json >"$TEST_DIR/.st" 2>/dev/null || return 1
	python3 - "$TEST_DIR/.st" "$n" <<'PY'
import json, sys
ends = [ch for a in json.load(open(sys.argv[1]))
        for ch in a.get("out", []) + a.get("in", [])]
sys.exit(0 if len(ends) == int(sys.argv[2]) and all(ch["up"] for ch in ends)
         else 1)
PY
}

# agent_up NAME [CS...]: status --json says agent NAME answers.
agent_up () {
	local n=$1
	shift
	"${@:-cs}" status -c "$CONF" --json >"$TEST_DIR/.st1" 2>/dev/null
	python3 - "$TEST_DIR/.st1" "$n" <<'PY'
import json, sys
up = [a for a in json.load(open(sys.argv[1]))
      if a["agent"] == sys.argv[2] and a["up"]]
sys.exit(0 if up else 1)
PY
}

# --- three agents on loopback ----------------------------------------------
# tls_loopback_abc: agents A, B, C with addr on 127.0.0.1 (ports in PA,
# PB, PC), certificates made, started, every channel up (12 ends).
tls_loopback_abc () {
	read -r PA PB PC < <(free_ports 3 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB C=127.0.0.1:$PC &&
	expect_ok cert -c "$CONF" &&
	start_cluster &&
	wait_for 10 channels_up 12
}

# tls_loopback_ab: agents A and B with addr on 127.0.0.1 (ports in PA,
# PB), certificates made, started (data files of an earlier cluster of
# the test removed first).
tls_loopback_ab () {
	rm -f A.data B.data &&
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_tls_config A=127.0.0.1:$PA B=127.0.0.1:$PB &&
	expect_ok cert -c "$CONF" &&
	start_cluster
}

# s_client OUT ARGS...: openssl s_client to A as the commands' client
# certificate (TLS 1.3, the chain verified), its output in OUT; stdin
# stays open for a second so the session's tickets arrive.
s_client () {
	local out=$1
	shift
	(sleep 1) | timeout 20 openssl s_client -connect "127.0.0.1:$PA" \
	    -tls1_3 -cert tls/client.crt -key tls/client.key \
	    -CAfile tls/ca.crt -verify_return_error "$@" >"$out" 2>&1
}

# --- test hosts: network namespaces joined through a hub -----------------
# netns_hub: create the hub namespace (cs-hub-PID), where the commands and
# the coordinator run; every namespace made here is deleted at exit. The
# script declares NETNS (test_require NETNS: skipped where namespaces are
# refused), so a namespace refused here is a failure.
NS_SFX=$$
NS_HUB=cs-hub-$NS_SFX
NSS=""
_ns_cleanup () {
	local n
	_cleanup
	for n in $NSS; do
		ip netns del "$n" 2>/dev/null
	done
}

ns_of () { echo "cs-$(echo "$1" | tr 'A-Z' 'a-z')-$NS_SFX"; }
ip_of () { case $1 in A) echo 10.77.0.1 ;; B) echo 10.77.0.2 ;; C) echo 10.77.0.3 ;; esac; }

netns_hub () {
	trap _ns_cleanup EXIT
	if ! test_required NETNS; then
		echo "Bail out! $TEST_NAME calls netns_hub without test_require NETNS"
		exit 1
	fi
	if ! ip netns add "$NS_HUB" 2>"$TEST_DIR/.nserr"; then
		test_expect_success 'setup: the hub namespace' '
			say "ip netns add refused: $(head -n1 "$TEST_DIR/.nserr")"
			false
		'
		test_done
	fi
	NSS=$NS_HUB
}

# netns_hosts NAME...: a bridge br0 (10.77.0.254/24) in the hub and, per
# NAME, a namespace with eth0 at ip_of NAME joined to it by a veth pair
# (vNAME on the hub's side). Addresses exist only inside the namespaces.
netns_hosts () {
	local h ns
	ip -n "$NS_HUB" link add br0 type bridge &&
	ip -n "$NS_HUB" addr add 10.77.0.254/24 dev br0 &&
	ip -n "$NS_HUB" link set br0 up &&
	ip -n "$NS_HUB" link set lo up || return 1
	for h in "$@"; do
		ns=$(ns_of "$h") &&
		ip netns add "$ns" && NSS="$NSS $ns" &&
		ip -n "$NS_HUB" link add "v$h" type veth peer name eth0 netns "$ns" &&
		ip -n "$NS_HUB" link set "v$h" master br0 &&
		ip -n "$NS_HUB" link set "v$h" up &&
		ip -n "$ns" addr add "$(ip_of "$h")/24" dev eth0 &&
		ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up || return 1
	done
}

# --- a snapshot caught while it streams ------------------------------------
# all_reported NAME...: each agent named has reported its part of a
# snapshot (status --json): the coordinator is storing the files.
all_reported () {
	local h
	for h in "$@"; do
		agent_phase_is "$h" reported || return 1
	done
}

# slow_snapshot_bg ARGS...: a snapshot with --json in the background (as
# snapshot_bg: SNAP_PID, .snap.out/.err) whose coordinator waits
# STREAM_DELAY_MS (default 200) before each piece it asks an agent for;
# returns once every agent of AGENTS has reported, the stream under way.
slow_snapshot_bg () {
	CUTSNAP_FAULT=coord-stream-delay:${STREAM_DELAY_MS:-200} \
	    cs snapshot -c "$CONF" -r "$REPO" --json "$@" \
	    >"$TEST_DIR/.snap.out" 2>"$TEST_DIR/.snap.err" &
	SNAP_PID=$!
	BG_PIDS="$BG_PIDS $SNAP_PID"
	# shellcheck disable=SC2086
	wait_for 30 all_reported $AGENTS
}

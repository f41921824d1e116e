# tls.sh - bench rows of TCP + mutual TLS against Unix sockets (issue 13).
# Sourced by run.sh, which calls tls_rows in its section 4; it uses
# run.sh's helpers and W, LOG, ROWS, CMDS, RUNS, CONFS. Run alone (about a
# minute and a half), it prints only its rows:
#   bash bench/tls.sh          (BENCH_RUNS, CUTSNAP as for run.sh)
#
# The TLS agents run as hosts of their own: each agent in a network
# namespace of its own, joined to a hub namespace (where load, snapshot and
# stop run) by a veth pair and a bridge, so their traffic crosses veth
# links as between hosts; this needs root (ip netns), and without it the
# rows say they ran over loopback instead.
#
# Both sides are measured in this section, one run of each in turn, so a
# machine that is busier for a while slows both alike. Besides the wall
# figure each row shows the CPU time per transfer of the agents (their
# utime + stime from /proc) and of the load client (its user + sys), the
# figure that tells where a difference comes from on a busy machine. The
# transfers/s row's floor comes from the CPU per round trip of two
# ping-pongs shaped like load, over TLS and over Unix sockets (see
# tls_rows).

# free_ports N (tests/ports.sh): N free TCP ports on 127.0.0.1.
. "$(dirname "${BASH_SOURCE[0]}")/../tests/ports.sh"

# --- hosts: network namespaces --------------------------------------------
# TLS_NS: the namespaces made (deleted by tls_ns_down); TLS_HUB: the hub's
# name, empty when namespaces were refused (then everything is loopback).
TLS_NS=""
TLS_HUB=""
TLS_PIDS=""
tls_ip () { echo "10.79.0.$1"; }

# tls_ns_up N: the hub (a bridge at 10.79.0.254/24) and N namespaces
# cs-bench-aI-PID with eth0 at tls_ip I; returns 1 when refused.
tls_ns_up () {
	local n=$1 i ns hub=cs-bench-hub-$$
	ip netns add "$hub" 2>>"$LOG" || return 1
	TLS_NS=$hub
	ip -n "$hub" link add br0 type bridge &&
	ip -n "$hub" addr add 10.79.0.254/24 dev br0 &&
	ip -n "$hub" link set br0 up &&
	ip -n "$hub" link set lo up || return 1
	for i in $(seq 1 "$n"); do
		ns=cs-bench-a$i-$$
		ip netns add "$ns" && TLS_NS="$TLS_NS $ns" &&
		ip -n "$hub" link add "va$i" type veth peer name eth0 netns "$ns" &&
		ip -n "$hub" link set "va$i" master br0 &&
		ip -n "$hub" link set "va$i" up &&
		ip -n "$ns" addr add "$(tls_ip "$i")/24" dev eth0 &&
		ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up || return 1
	done
	TLS_HUB=$hub
}

# tls_ns_down: kill the agents started in the namespaces, delete them.
tls_ns_down () {
	local p n
	for p in $TLS_PIDS; do kill "$p" 2>/dev/null; done
	tls_ns_reap
	for n in $TLS_NS; do ip netns del "$n" 2>/dev/null; done
	TLS_NS="" TLS_HUB=""
}

# on_hub CMD...: CMD in the hub namespace (or here, without namespaces).
on_hub () {
	if [ -n "$TLS_HUB" ]; then
		ip netns exec "$TLS_HUB" "$@"
	else
		"$@"
	fi
}

# make_tls_cluster DIR N: like make_cluster, each agent with an addr (at
# tls_ip I:7400 in its namespace, or a free loopback port), and its
# certificates.
make_tls_cluster () {
	local d=$1 n=$2 i p
	make_cluster "$d" "$n"
	sed -i 's/^run_dir = run$/run_dir = run\ntls_dir = tls/' "$d/c.ini"
	i=0
	for p in $(free_ports "$n"); do
		i=$((i + 1))
		[ -n "$TLS_HUB" ] && p="$(tls_ip "$i"):7400" || p="127.0.0.1:$p"
		sed -i "/^data = a$i.data\$/a addr = $p" "$d/c.ini"
	done
	"$CS" cert -c "$d/c.ini" >>"$LOG" 2>&1
}

# tls_start CONF N: the N agents of a TLS cluster, each in its namespace
# (cutsnap start, without namespaces); waits until load can reach them.
tls_start () {
	local c=$1 n=$2 i t
	if [ -z "$TLS_HUB" ]; then
		start "$c"
		return
	fi
	for i in $(seq 1 "$n"); do
		ip netns exec "cs-bench-a$i-$$" setsid "$CS" agent -c "$c" \
		    --name "a$i" >>"$LOG" 2>&1 </dev/null &
		TLS_PIDS="$TLS_PIDS $!"
	done
	for t in $(seq 1 100); do
		# status exits 0 only when every agent answered.
		on_hub "$CS" status -c "$c" --json >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "the agents of $c did not come up in their namespaces"
}

# tls_stop CONF: stop a TLS cluster's agents.
tls_stop () {
	if [ -z "$TLS_HUB" ]; then
		stop "$1"
	else
		on_hub "$CS" stop -c "$1" >>"$LOG" 2>&1
		tls_ns_reap
	fi
}

# tls_ns_reap: wait up to 10 s for the agents started in the namespaces to
# exit, then kill what is left.
tls_ns_reap () {
	local p n
	for p in $TLS_PIDS; do
		n=0
		while kill -0 "$p" 2>/dev/null && [ $n -lt 100 ]; do
			sleep 0.1; n=$((n + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	TLS_PIDS=""
}

# agents_ticks CONF N: CPU clock ticks (utime + stime) used so far by the
# N agents a1..aN of CONF.
agents_ticks () {
	local i p t=0
	for i in $(seq 1 "$2"); do
		p=$(agent_pid "$1" "a$i")
		[ -n "$p" ] || fail "agent a$i of $1 is not running"
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo "$t"
}

# tls_load CONF K OUT [on_hub]: one checked 5 s load with K clients (in
# the hub namespace with on_hub); prints
# "TRANSFERS_PER_S AGENT_US LOAD_US": the CPU microseconds per transfer
# of the three agents together and of the load client.
tls_load () {
	local c=$1 k=$2 out=$3 a0 a1 cpu rc n TIMEFORMAT='%U %S'
	a0=$(agents_ticks "$c" 3)
	cpu=$({ time ${4:-} "$CS" load --json -c "$c" -s 5 --clients "$k" >"$out" \
	    2>>"$LOG"; } 2>&1)
	rc=$?
	a1=$(agents_ticks "$c" 3)
	load_verify "$out" "$rc" -c "$c" -s 5 --clients "$k"
	n=$(field transfers "$out")
	[ "$n" -gt 0 ] || fail "load on $c made no transfer"
	awk -v n="$n" -v t="$(field transfers_per_s "$out")" \
	    -v a="$((a1 - a0))" -v hz="$(getconf CLK_TCK)" -v cpu="$cpu" \
	    'BEGIN { split(cpu, u, " ");
	        printf "%.0f %.1f %.1f\n", t, a * 1e6 / hz / n,
	            (u[1] + u[2]) * 1e6 / n }'
}

# tls_pingpong TLS_DIR K: build/bench/pingpong with K clients and 3
# servers shaped like load against the cluster (each client holds a
# connection to every server and sends each request on one at random);
# over TCP + TLS with TLS_DIR ("" for Unix sockets): the servers in the
# agents' namespaces (at tls_ip I:7500), the clients in the hub; on
# loopback without namespaces. Prints "ROUND_TRIPS_PER_S CPU_US": the CPU
# microseconds per round trip, clients and servers together, of the timed
# part (handshakes left out).
tls_pingpong () {
	local f=$W/pingpong.cpu rt
	rm -f "$f"
	if [ -z "$1" ]; then
		rt=$(PINGPONG_SPREAD=1 PINGPONG_CPU=$f "$PINGPONG" "$W" 3 "$2" 3 \
		    2>>"$LOG") || return 1
	elif [ -n "$TLS_HUB" ]; then
		rt=$(PINGPONG_SPREAD=1 PINGPONG_CPU=$f PINGPONG_TLS=$1 \
		    PINGPONG_ADDR="$(tls_ip %d):7500" \
		    PINGPONG_NETNS="/run/netns/cs-bench-a%d-$$" \
		    on_hub "$PINGPONG" "$W" 3 "$2" 3 2>>"$LOG") || return 1
	else
		rt=$(PINGPONG_SPREAD=1 PINGPONG_CPU=$f PINGPONG_TLS=$1 \
		    "$PINGPONG" "$W" 3 "$2" 3 2>>"$LOG") || return 1
	fi
	[ -s "$f" ] || return 1
	echo "$rt $(awk '{ print $1 }' "$f")"
}

tls_rows () {
	local k=${PEAK_K:-32} r o u_t=() u_a=() u_l=() t_t=() t_a=() t_l=()
	local vu=() vt=() p_t=() p_u=() ut ua ul tt ta tl pt pu fl where

	if tls_ns_up 4; then
		where="each agent in a network namespace of its own, joined by veth to the hub where load and snapshot run"
	else
		tls_ns_down
		where="on 127.0.0.1 (network namespaces refused: not root?)"
		say "TLS rows over loopback: ip netns add refused"
	fi
	make_cluster "$W/tlsu" 3
	make_tls_cluster "$W/tls" 3
	start "$W/tlsu/c.ini"
	tls_start "$W/tls/c.ini" 3
	for r in $(seq 1 "$RUNS"); do
		read -r o ua ul < <(tls_load "$W/tlsu/c.ini" "$k" "$W/tlsu.$r") ||
		    fail "load over Unix sockets"
		u_t+=("$o"); u_a+=("$ua"); u_l+=("$ul")
		read -r o ta tl < <(tls_load "$W/tls/c.ini" "$k" "$W/tls.$r" on_hub) ||
		    fail "load over TLS"
		t_t+=("$o"); t_a+=("$ta"); t_l+=("$tl")
	done
	stop "$W/tlsu/c.ini"
	tls_stop "$W/tls/c.ini"
	# The floor of the ratio, from the CPU the transport adds: a TLS
	# transfer does everything a Unix one does, plus at least one
	# request/reply over TCP+TLS instead of a Unix socket. The CPU that
	# adds per round trip is measured as the difference between two
	# ping-pongs shaped like load (K clients, a connection from each to
	# each of 3 servers, no work, no fsync), one over the same TLS,
	# links and certificates (servers where the agents ran, clients
	# where load ran), one over Unix sockets, one run of each in turn.
	# With that CPU on top of a Unix transfer's and every core busy,
	# TLS could run NCPU s / (Unix CPU + extra) transfers a second; as
	# a share of the Unix rate (at most 1), that is the best the row can
	# show here. The agents' channel records (about 0.2 a transfer) are
	# left out, so the floor is, if anything, high.
	for r in $(seq 1 "$RUNS"); do
		read -r o pt < <(tls_pingpong "$W/tls/tls" "$k") ||
		    fail "pingpong over TLS"
		p_t+=("$pt")
		read -r o pu < <(tls_pingpong "" "$k") ||
		    fail "pingpong over Unix sockets"
		p_u+=("$pu")
	done
	rm -rf "$W/tlsu" "$W/tls"
	ut=$(median "${u_t[@]}"); ua=$(median "${u_a[@]}"); ul=$(median "${u_l[@]}")
	tt=$(median "${t_t[@]}"); ta=$(median "${t_a[@]}"); tl=$(median "${t_l[@]}")
	pt=$(median "${p_t[@]}"); pu=$(median "${p_u[@]}")
	fl=$(calc "$NCPU * 1000000 / (($ua + $ul + $pt - $pu) * $ut)")
	fl=$(calc "$fl > 1 ? 1 : $fl")
	cmd "cutsnap load -c CONF -s 5 --clients K      # 3 agents, each with addr = HOST:PORT (TCP + TLS 1.3), $where; one run in turn with the same over Unix sockets"
	cmd "PINGPONG_SPREAD=1 PINGPONG_CPU=F [PINGPONG_TLS=TLS_DIR] build/bench/pingpong DIR 3 K 3   # ping-pong shaped like load (each client connected to every server), over TCP + mutual TLS 1.3 (servers where the agents ran, clients where load ran) and over Unix sockets, one run of each in turn: CPU per round trip"
	row "CPU us/round trip, ping-pong over TCP+TLS, $k clients" "$pt" \
	    "$pu (over Unix sockets)" "$(calc "$pt / $pu")" "-" "-"
	row "transfers/s over TCP+TLS, $k clients" "$tt" "$ut (Unix sockets)" \
	    "$(calc "$tt / $ut")" ">= 0.7x" \
	    "$(floored "$(verdict "$tt >= 0.7 * $ut")" "$fl" ">=" 0.7 "$NCPU cores busy with a Unix transfer's CPU plus the $(calc "$pt - $pu") us a TCP+TLS round trip adds")"
	row "CPU us/transfer over TCP+TLS: agents $ta + load $tl" \
	    "$(calc "$ta + $tl")" \
	    "$(calc "$ua + $ul") (Unix: agents $ua + load $ul)" \
	    "$(calc "($ta + $tl) / ($ua + $ul)")" "-" "-"

	make_cluster "$W/tlsu4" 4
	make_tls_cluster "$W/tls4" 4
	start "$W/tlsu4/c.ini"
	load_checked "$W/tlsu4/load" -c "$W/tlsu4/c.ini" -s 1 --clients 2 --initial 1000
	tls_start "$W/tls4/c.ini" 4
	on_hub "$CS" load --json -c "$W/tls4/c.ini" -s 1 --clients 2 --initial 1000 \
	    >"$W/tls4/load" 2>>"$LOG"
	load_verify "$W/tls4/load" $? -c "$W/tls4/c.ini" -s 1 --clients 2 --initial 1000
	for r in $(seq 1 "$RUNS"); do
		fresh "$W/tlsu4/c.ini" "$W/tlsu4/repo"
		timed vu "$CS" snapshot -c "$W/tlsu4/c.ini" -r "$W/tlsu4/repo"
		tls_stop "$W/tls4/c.ini"
		tls_start "$W/tls4/c.ini" 4
		rm -rf "$W/tls4/repo"; sync
		timed vt on_hub "$CS" snapshot -c "$W/tls4/c.ini" -r "$W/tls4/repo"
	done
	stop "$W/tlsu4/c.ini"
	tls_stop "$W/tls4/c.ini"
	tls_ns_down
	rm -rf "$W/tlsu4" "$W/tls4"
	ut=$(median "${vu[@]}"); tt=$(median "${vt[@]}")
	cmd "cutsnap snapshot -c CONF -r FRESH_REPO    # 4 agents over TCP + TLS, $where, small files; one run in turn with the same over Unix sockets"
	row "snapshot ms over TCP+TLS, 4 agents" "$tt" "$ut (Unix sockets)" \
	    "$(calc "$tt / $ut")" "-" "-"
}

# Run alone: a scratch directory of its own, the rows on stdout.
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ -z "${TLS_ALONE:-}" ]; then
	TLS_ALONE=1 BENCH_LIB=1 . "$(dirname "$0")/run.sh"
	_base=${TMPDIR:-/tmp}
	[ ${#_base} -gt 40 ] && _base=/tmp
	W=$(mktemp -d "$_base/csb.XXXXXX") || exit 2
	LOG=$W/bench.log CMDS=$W/cmds.md CONFS=""
	ROWS=$W/rows.md	# row () appends to it
	export ROWS
	: >"$CMDS"
	trap 'tls_ns_down; for c in $CONFS; do timeout 60 "$CS" stop -c "$c" >/dev/null 2>&1; done; [ "${BENCH_KEEP:-0}" = 1 ] && echo "bench: kept $W" >&2 || rm -rf "$W"' EXIT
	trap 'exit 130' INT TERM
	tls_rows
fi

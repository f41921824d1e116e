# tls.sh - bench rows of TCP + mutual TLS against Unix sockets (issue 13).
# Sourced by run.sh, which calls tls_rows in its section 4; it uses
# run.sh's helpers and W, LOG, ROWS, CMDS, RUNS, CONFS. Run alone (about a
# minute and a half), it prints only its rows:
#   bash bench/tls.sh          (BENCH_RUNS, CUTSNAP as for run.sh)
#
# Both sides are measured in this section, one run of each in turn, so a
# machine that is busier for a while slows both alike. Besides the wall
# figure each row shows the CPU time per transfer of the agents (their
# utime + stime from /proc) and of the load client (its user + sys), the
# figure that tells where a difference comes from on a busy machine.

# free_ports N (tests/ports.sh): N free TCP ports on 127.0.0.1.
. "$(dirname "${BASH_SOURCE[0]}")/../tests/ports.sh"

# make_tls_cluster DIR N: like make_cluster, each agent with an addr on a
# free loopback port, and its certificates.
make_tls_cluster () {
	local d=$1 n=$2 i p
	make_cluster "$d" "$n"
	sed -i 's/^run_dir = run$/run_dir = run\ntls_dir = tls/' "$d/c.ini"
	i=0
	for p in $(free_ports "$n"); do
		i=$((i + 1))
		sed -i "/^data = a$i.data\$/a addr = 127.0.0.1:$p" "$d/c.ini"
	done
	"$CS" cert -c "$d/c.ini" >>"$LOG" 2>&1
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

# tls_load CONF K OUT: one checked 5 s load with K clients; prints
# "TRANSFERS_PER_S AGENT_US LOAD_US": the CPU microseconds per transfer
# of the three agents together and of the load client.
tls_load () {
	local c=$1 k=$2 out=$3 a0 a1 cpu rc n TIMEFORMAT='%U %S'
	a0=$(agents_ticks "$c" 3)
	cpu=$({ time "$CS" load --json -c "$c" -s 5 -k "$k" >"$out" \
	    2>>"$LOG"; } 2>&1)
	rc=$?
	a1=$(agents_ticks "$c" 3)
	load_verify "$out" "$rc" -c "$c" -s 5 -k "$k"
	n=$(field transfers "$out")
	[ "$n" -gt 0 ] || fail "load on $c made no transfer"
	awk -v n="$n" -v t="$(field transfers_per_s "$out")" \
	    -v a="$((a1 - a0))" -v hz="$(getconf CLK_TCK)" -v cpu="$cpu" \
	    'BEGIN { split(cpu, u, " ");
	        printf "%.0f %.1f %.1f\n", t, a * 1e6 / hz / n,
	            (u[1] + u[2]) * 1e6 / n }'
}

tls_rows () {
	local k=${PEAK_K:-32} r o u_t=() u_a=() u_l=() t_t=() t_a=() t_l=()
	local vu=() vt=() ut ua ul tt ta tl

	make_cluster "$W/tlsu" 3
	make_tls_cluster "$W/tls" 3
	start "$W/tlsu/c.ini"
	start "$W/tls/c.ini"
	for r in $(seq 1 "$RUNS"); do
		read -r o ua ul < <(tls_load "$W/tlsu/c.ini" "$k" "$W/tlsu.$r") ||
		    fail "load over Unix sockets"
		u_t+=("$o"); u_a+=("$ua"); u_l+=("$ul")
		read -r o ta tl < <(tls_load "$W/tls/c.ini" "$k" "$W/tls.$r") ||
		    fail "load over TLS"
		t_t+=("$o"); t_a+=("$ta"); t_l+=("$tl")
	done
	stop "$W/tlsu/c.ini"
	stop "$W/tls/c.ini"
	rm -rf "$W/tlsu" "$W/tls"
	ut=$(median "${u_t[@]}"); ua=$(median "${u_a[@]}"); ul=$(median "${u_l[@]}")
	tt=$(median "${t_t[@]}"); ta=$(median "${t_a[@]}"); tl=$(median "${t_l[@]}")
	cmd "cutsnap load -c CONF -s 5 -k K      # 3 agents, each with addr = 127.0.0.1:PORT (TCP + TLS 1.3), one run in turn with the same over Unix sockets"
	row "transfers/s over TCP+TLS, $k clients" "$tt" "$ut (Unix sockets)" \
	    "$(calc "$tt / $ut")" ">= 0.7x" "$(verdict "$tt >= 0.7 * $ut")"
	row "CPU us/transfer over TCP+TLS: agents $ta + load $tl" \
	    "$(calc "$ta + $tl")" \
	    "$(calc "$ua + $ul") (Unix: agents $ua + load $ul)" \
	    "$(calc "($ta + $tl) / ($ua + $ul)")" "-" "-"

	make_cluster "$W/tlsu4" 4
	make_tls_cluster "$W/tls4" 4
	for o in tlsu4 tls4; do
		start "$W/$o/c.ini"
		load_checked "$W/$o/load" -c "$W/$o/c.ini" -s 1 -k 2 --initial 1000
	done
	for r in $(seq 1 "$RUNS"); do
		fresh "$W/tlsu4/c.ini" "$W/tlsu4/repo"
		timed vu "$CS" snapshot -c "$W/tlsu4/c.ini" -r "$W/tlsu4/repo"
		fresh "$W/tls4/c.ini" "$W/tls4/repo"
		timed vt "$CS" snapshot -c "$W/tls4/c.ini" -r "$W/tls4/repo"
	done
	stop "$W/tlsu4/c.ini"
	stop "$W/tls4/c.ini"
	rm -rf "$W/tlsu4" "$W/tls4"
	ut=$(median "${vu[@]}"); tt=$(median "${vt[@]}")
	cmd "cutsnap snapshot -c CONF -r FRESH_REPO    # 4 agents over TCP + TLS, small files, one run in turn with the same over Unix sockets"
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
	trap 'for c in $CONFS; do timeout 60 "$CS" stop -c "$c" >/dev/null 2>&1; done; [ "${BENCH_KEEP:-0}" = 1 ] && echo "bench: kept $W" >&2 || rm -rf "$W"' EXIT
	trap 'exit 130' INT TERM
	tls_rows
fi

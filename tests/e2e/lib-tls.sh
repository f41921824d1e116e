# lib-tls.sh - helpers of the TCP + TLS tests (sourced after lib.sh; not
# named t*.sh, so the suite does not run it as a test).

# free_ports N: N TCP ports free on 127.0.0.1 now, one a line.
free_ports () {
	python3 - "$1" <<'PY'
import socket, sys
ss = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    ss.append(s)
for s in ss:
    print(s.getsockname()[1])
PY
}

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

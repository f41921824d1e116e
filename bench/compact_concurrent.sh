# compact_concurrent.sh - bench rows of compaction (issue 11) and of
# concurrent snapshots (issue 12). Sourced by run.sh, which calls
# compact_rows and concurrent_rows in its section 5; they use run.sh's
# helpers and W, LOG, ROWS, CMDS, RUNS. One of them by hand:
#   BENCH_LIB=1 . bench/run.sh; W=$(mktemp -d); LOG=$W/log ROWS=$W/rows
#   CMDS=$W/cmds CONFS=""; : >"$CMDS"; compact_rows

# status_max CONF FIELD: the largest FIELD (size, live_size) over the
# agents of CONF (status --json).
status_max () {
	"$CS" status -c "$1" --json 2>>"$LOG" | python3 -c '
import json, sys
print(max(a[sys.argv[1]] for a in json.load(sys.stdin) if a["up"]))' "$2"
}

# history CONF AGENT MIB: overwrite AGENT's key "blob" MIB times with 1 MiB
# random values (slices of $W/rand): MIB MiB of history, 1 MiB live.
history () {
	local i
	for i in $(seq 0 $(($3 - 1))); do
		dd if="$W/rand" bs=1M skip=$((i % 64)) count=1 status=none |
		    "$CS" put -c "$1" "$2" blob - >>"$LOG" 2>&1 ||
		    fail "put blob #$i"
	done
}

compact_rows () {
	local c n r comp cms v=() su_before su_after tps0 tps_c
	[ -s "$W/rand" ] || head -c $((64 * MIB)) /dev/urandom >"$W/rand"

	# File size against live size under load, with compact_min_size =
	# 4M and without compaction (64G: never), the same load each.
	for n in 4M 64G; do
		make_cluster "$W/cmp$n" 3
		sed -i "/^run_dir = run\$/a compact_min_size = $n" "$W/cmp$n/c.ini"
		start "$W/cmp$n/c.ini"
		load_checked "$W/cmp$n/load" -c "$W/cmp$n/c.ini" -s 30 --clients 64 \
		    --initial 1000000
		eval "SIZE_$n=$(status_max "$W/cmp$n/c.ini" size)"
		eval "LIVE_$n=$(status_max "$W/cmp$n/c.ini" live_size)"
		eval "XFER_$n=$(field transfers "$W/cmp$n/load")"
		stop "$W/cmp$n/c.ini"
		rm -rf "$W/cmp$n"
	done
	cmd "cutsnap load -c CONF -s 30 --clients 64   # 3 agents, compact_min_size = 4M, then 64G (never)"
	row "largest data file MiB after $XFER_4M transfers, compact_min_size 4M (live KiB)" \
	    "$(mib "$SIZE_4M") ($(calc "$LIVE_4M / 1024"))" \
	    "$(mib "$SIZE_64G") MiB, no compaction, $XFER_64G transfers" \
	    "$(calc "$SIZE_4M / $SIZE_64G")" "<= 16 MiB" \
	    "$(verdict "$SIZE_4M <= 16 * $MIB")"

	# A 1 GiB history on a1 (1024 overwrites of one 1 MiB value): agent
	# start-up before and after cutsnap compact. Transfers/s while the
	# compaction runs against the rate without one: the history grown to
	# 2 GiB first, so that the compaction lasts about as long as the 2 s
	# load started with it (its duration is in the row).
	c=$W/hist/c.ini
	make_cluster "$W/hist" 3
	sed -i "/^run_dir = run\$/a compact_min_size = 64G" "$c"
	start "$c"
	history "$c" a1 1024
	load_checked "$W/hist/load0" -c "$c" -s 2 --clients 32 --initial 1000000
	tps0=$(field transfers_per_s "$W/hist/load0")
	for r in $(seq 1 "$RUNS"); do
		stop "$c"
		timed v "$CS" start -c "$c"
	done
	su_before=$(median "${v[@]}")
	history "$c" a1 1024
	"$CS" compact -c "$c" a1 --json >"$W/hist/compact" 2>>"$LOG" &
	comp=$!
	load_checked "$W/hist/load1" -c "$c" -s 2 --clients 32
	wait "$comp" || fail "cutsnap compact a1 of a 1 GiB history"
	tps_c=$(field transfers_per_s "$W/hist/load1")
	cms=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))[0]["ms"])' "$W/hist/compact")
	v=()
	for r in $(seq 1 "$RUNS"); do
		stop "$c"
		timed v "$CS" start -c "$c"
	done
	su_after=$(median "${v[@]}")
	stop "$c"
	rm -rf "$W/hist"
	cmd "cutsnap start -c CONF                 # a1 with a 1 GiB history, before and after cutsnap compact"
	cmd "cutsnap compact -c CONF a1 & cutsnap load -c CONF -s 2 --clients 32   # a1 with a 2 GiB history"
	row "agent start-up ms, 1 GiB history, after compact" "$su_after" \
	    "$su_before (before)" "$(calc "$su_after / $su_before")" "-" "-"
	row "transfers/s while a 2 GiB compaction runs ($cms ms), 32 clients" \
	    "$tps_c" "$tps0 (no compaction)" "$(calc "$tps_c / $tps0")" \
	    ">= 0.8x" "$(verdict "$tps_c >= 0.8 * $tps0")"
}

# 4 snapshots started together from the 4 agents (each its initiator)
# into one fresh repository, against one snapshot alone: the time until
# the last one completes. a1 holds 64 MiB, so the copy is most of it and
# the four share it (a chunk already stored is not copied twice).
concurrent_rows () {
	local c=$W/conc/c.ini r i t0 t1 one=() four=() pids
	[ -s "$W/rand" ] || head -c $((64 * MIB)) /dev/urandom >"$W/rand"
	make_cluster "$W/conc" 4
	start "$c"
	fill "$c" a1 0 64
	load_checked "$W/conc/load" -c "$c" -s 1 --clients 4 --initial 1000
	for r in $(seq 1 "$RUNS"); do
		fresh "$c" "$W/conc/repo"
		"$CS" init -r "$W/conc/repo" >>"$LOG" 2>&1 || fail "init"
		timed one "$CS" snapshot -c "$c" -r "$W/conc/repo"
		fresh "$c" "$W/conc/repo"
		"$CS" init -r "$W/conc/repo" >>"$LOG" 2>&1 || fail "init"
		t0=$(now_ns)
		pids=""
		for i in 1 2 3 4; do
			"$CS" snapshot -c "$c" -r "$W/conc/repo" --initiator "a$i" \
			    >>"$LOG" 2>&1 &
			pids="$pids $!"
		done
		for i in $pids; do
			wait "$i" || fail "one of 4 concurrent snapshots failed"
		done
		t1=$(now_ns)
		four+=($(((t1 - t0) / 1000000)))
		[ "$("$CS" ls -r "$W/conc/repo" --json 2>>"$LOG" | python3 -c '
import json, sys
print(sum(1 for s in json.load(sys.stdin) if s["status"] == "complete"))')" = 4 ] ||
		    fail "4 concurrent snapshots: not 4 listed complete"
	done
	stop "$c"
	rm -rf "$W/conc"
	cmd "cutsnap snapshot -c CONF -r FRESH_REPO --initiator aI    # I = 1..4 at once, 4 agents, a1 64 MiB"
	row "4 snapshots at once ms, 4 initiators, 64 MiB" "$(median "${four[@]}")" \
	    "$(median "${one[@]}") (one alone)" \
	    "$(calc "$(median "${four[@]}") / $(median "${one[@]}")")" \
	    "< 4x (one by one)" \
	    "$(verdict "$(median "${four[@]}") < 4 * $(median "${one[@]}")")"
}

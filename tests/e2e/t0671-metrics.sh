#!/bin/bash
# GET /metrics on each agent's metrics_addr, read with Prometheus' own
# parser: every family typed and described, counters that move with the
# transfers, acks, snapshots made, gauges for the channels' queues; bad
# requests and silent clients never block the agent; and snapshot
# --metrics-file, a node_exporter textfile written atomically.
. "$(dirname "$0")/lib.sh"
test_require PY_PROMETHEUS
. "$_lib_dir/../ports.sh"

# scrape NAME: agent NAME's /metrics into NAME.json.
scrape () {
	local port
	case $1 in A) port=$PA ;; B) port=$PB ;; esac
	python3 "$_lib_dir/scrape.py" http "127.0.0.1:$port" "$1.json"
}
# val NAME SAMPLE: a sample's value in NAME.json, e.g.
# val A 'cutsnap_transfers_total{agent=A}'.
val () {
	json_get "int(d[\"samples\"][sys.argv[3]])" "$1.json" "$2"
}
# val_is NAME SAMPLE N: scrape NAME, the sample is N.
val_is () { scrape "$1" && [ "$(val "$1" "$2")" = "$3" ]; }

test_expect_success 'setup: agents A and B, each with its metrics_addr' '
	read -r PA PB < <(free_ports 2 | paste -sd" ") &&
	make_config A B &&
	sed -i -e "/^data = A.data/a metrics_addr = 127.0.0.1:$PA" \
	    -e "/^data = B.data/a metrics_addr = 127.0.0.1:$PB" "$CONF" &&
	start_cluster &&
	set_balances A=100 B=50 &&
	grep -q "serving metrics on http://127.0.0.1:$PA/metrics" run/A.log
'

test_expect_success 'the page parses: format 0.0.4, every family typed and described' '
	scrape A &&
	json_check "\"version=0.0.4\" in d[\"content_type\"] and d[\"content_type\"].startswith(\"text/plain\")" A.json &&
	json_check "len(d[\"families\"]) >= 20" A.json &&
	json_check "all(f[\"type\"] in (\"counter\", \"gauge\", \"summary\") and f[\"help\"] for f in d[\"families\"].values())" A.json &&
	json_check "all(k.startswith(\"cutsnap_\") and \"agent=A\" in k for k in d[\"samples\"])" A.json &&
	json_check "d[\"families\"][\"cutsnap_transfers\"][\"type\"] == \"counter\"" A.json &&
	json_check "d[\"families\"][\"cutsnap_channel_unacked\"][\"type\"] == \"gauge\"" A.json
'

test_expect_success 'transfers move the counters at both ends' '
	scrape A && scrape B &&
	t0=$(val A "cutsnap_transfers_total{agent=A}") &&
	s0=$(val A "cutsnap_messages_sent_total{agent=A,peer=B}") &&
	k0=$(val A "cutsnap_messages_acked_total{agent=A,peer=B}") &&
	a0=$(val B "cutsnap_messages_applied_total{agent=B,peer=A}") &&
	w0=$(val A "cutsnap_client_writes_total{agent=A}") &&
	for i in 1 2 3 4 5; do cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null || return 1; done &&
	wait_bal B 55 &&
	scrape A && scrape B &&
	expect_eq "$(val A "cutsnap_transfers_total{agent=A}")" $((t0 + 5)) transfers &&
	expect_eq "$(val A "cutsnap_messages_sent_total{agent=A,peer=B}")" $((s0 + 5)) sent &&
	expect_eq "$(val B "cutsnap_messages_applied_total{agent=B,peer=A}")" $((a0 + 5)) applied &&
	expect_eq "$(val A "cutsnap_client_writes_total{agent=A}")" $((w0 + 5)) writes &&
	wait_for 30 val_is A "cutsnap_messages_acked_total{agent=A,peer=B}" $((k0 + 5)) &&
	val_is A "cutsnap_channel_unacked{agent=A,peer=B}" 0 &&
	scrape B && [ "$(val B "cutsnap_acks_sent_total{agent=B}")" -ge 1 ]
'

test_expect_success 'a held channel: its queue gauge grows, then drains' '
	cs channel -c "$CONF" hold A B &&
	for i in 1 2 3; do cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null || return 1; done &&
	scrape A &&
	expect_eq "$(val A "cutsnap_channel_queued{agent=A,peer=B}")" 3 queued &&
	# Held: queued, never written, so none waits for an ack yet.
	expect_eq "$(val A "cutsnap_channel_unacked{agent=A,peer=B}")" 0 unacked &&
	expect_eq "$(val A "cutsnap_channel_up{agent=A,peer=B}")" 1 up &&
	cs channel -c "$CONF" release A B &&
	wait_for 30 val_is A "cutsnap_channel_unacked{agent=A,peer=B}" 0 &&
	val_is A "cutsnap_channel_queued{agent=A,peer=B}" 0 &&
	wait_bal B 58
'

test_expect_success 'a snapshot counts at every agent, with its bytes and time, not as failed' '
	scrape B &&
	r0=$(val B "cutsnap_snapshots_recorded_total{agent=B}") &&
	f0=$(val B "cutsnap_snapshots_failed_total{agent=B}") &&
	c0=$(val B "cutsnap_snapshots_committed_total{agent=B}") &&
	n0=$(val B "cutsnap_snapshot_record_seconds_count{agent=B}") &&
	take_snapshot &&
	wait_for 30 val_is B "cutsnap_snapshots_committed_total{agent=B}" $((c0 + 1)) &&
	expect_eq "$(val B "cutsnap_snapshots_recorded_total{agent=B}")" $((r0 + 1)) recorded &&
	expect_eq "$(val B "cutsnap_snapshot_record_seconds_count{agent=B}")" $((n0 + 1)) count &&
	[ "$(val B "cutsnap_snapshot_recorded_bytes_total{agent=B}")" -gt 0 ] &&
	expect_eq "$(val B "cutsnap_snapshots_in_progress{agent=B}")" 0 in-progress &&
	expect_eq "$(val B "cutsnap_snapshots_failed_total{agent=B}")" "$f0" failed
'

test_expect_success 'data file size and open dead letters agree with status --json' '
	cs status -c "$CONF" --json >st.json &&
	size=$(json_get "[a for a in d if a[\"agent\"] == \"A\"][0][\"size\"]" st.json) &&
	scrape A &&
	expect_eq "$(val A "cutsnap_data_file_bytes{agent=A}")" "$size" size &&
	expect_eq "$(val A "cutsnap_dead_letters_open{agent=A}")" 0 dead
'

test_expect_success 'a credit that cannot apply counts as a dead letter' '
	cs put -c "$CONF" B txt hello &&
	scrape B && d0=$(val B "cutsnap_dead_letters_total{agent=B}") &&
	cs put -c "$CONF" A txt 10 &&
	cs transfer -c "$CONF" A:txt B:txt 1 >/dev/null &&
	wait_for 30 val_is B "cutsnap_dead_letters_open{agent=B}" 1 &&
	expect_eq "$(val B "cutsnap_dead_letters_total{agent=B}")" $((d0 + 1)) dead
'

test_expect_success 'bad requests get 404, 405 and 431; the agent serves on' '
	python3 - "$PA" <<-PY
	import socket, sys
	port = int(sys.argv[1])
	def ask(req):
	    s = socket.create_connection(("127.0.0.1", port), timeout=20)
	    s.sendall(req)
	    data = b""
	    while True:
	        b = s.recv(65536)
	        if not b:
	            break
	        data += b
	    return data.split(b"\r\n", 1)[0].decode()
	checks = [(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
	          (b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "405"),
	          (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 8000 + b"\r\n\r\n", "431"),
	          (b"nonsense\r\n\r\n", "400"),
	          (b"GET /metrics HTTP/1.0\r\n\r\n", "200")]
	for req, want in checks:
	    line = ask(req)
	    if line.split(" ")[1] != want:
	        sys.exit("%r: %s, expected %s" % (req[:30], line, want))
	print("checked", len(checks))
	PY
	cs status -c "$CONF" >/dev/null
'

test_expect_success 'eight silent clients: a ninth is refused (503), the agent still answers' '
	python3 - "$PA" "$CONF" "$CUTSNAP" <<-PY
	import socket, subprocess, sys, time
	port, conf, cutsnap = int(sys.argv[1]), sys.argv[2], sys.argv[3]
	idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
	# No wait needed: the agent accepts from its backlog in order, so
	# these eight hold the slots before the ninth is looked at.
	s = socket.create_connection(("127.0.0.1", port), timeout=20)
	s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
	line = s.recv(4096).split(b"\r\n", 1)[0].decode()
	if " 503 " not in line:
	    sys.exit("ninth client: %r" % line)
	t = time.monotonic()
	subprocess.run([cutsnap, "get", "-c", conf, "A", "bal"], check=True,
	               stdout=subprocess.DEVNULL, timeout=20)
	if time.monotonic() - t > 5:
	    sys.exit("the agent answered slowly while scrapers idled")
	for c in idle:
	    c.close()
	PY
	wait_for 30 scrape A
'

test_expect_success 'snapshot --metrics-file: a node_exporter textfile of the snapshot' '
	mkdir -p textfile &&
	expect_ok snapshot -c "$CONF" -r "$REPO" --metrics-file textfile/cutsnap.prom &&
	id=$(cat "$OUT") &&
	python3 "$_lib_dir/scrape.py" file textfile/cutsnap.prom m.json &&
	cs ls -r "$REPO" --json >ls.json &&
	bytes=$(json_get "[s for s in d if s[\"id\"] == $id][0][\"bytes\"]" ls.json) &&
	r="repo=$REPO" &&
	expect_eq "$(val m "cutsnap_snapshot_success{$r}")" 1 success &&
	expect_eq "$(val m "cutsnap_snapshot_id{$r}")" "$id" id &&
	expect_eq "$(val m "cutsnap_snapshot_files{$r}")" 2 files &&
	expect_eq "$(val m "cutsnap_snapshot_bytes{$r}")" "$bytes" bytes &&
	now=$(date +%s) && ts=$(val m "cutsnap_snapshot_timestamp_seconds{$r}") &&
	[ $((now - ts)) -ge 0 ] && [ $((now - ts)) -le 60 ] &&
	json_check "d[\"samples\"][\"cutsnap_snapshot_duration_seconds{repo=$REPO}\"] > 0" m.json &&
	json_check "len(d[\"families\"]) == 7" m.json &&
	! ls textfile | grep -q tmp
'

test_expect_success '--metrics-file in a missing directory: exit 2 before any snapshot' '
	cs ls -r "$REPO" --json >ls1.json &&
	expect_error 2 snapshot -c "$CONF" -r "$REPO" --metrics-file nodir/x.prom &&
	err_matches "metrics-file nodir/x.prom: its directory does not exist" &&
	cs ls -r "$REPO" --json >ls2.json &&
	cmp ls1.json ls2.json
'

test_expect_success 'a failed snapshot writes success 0 over the last file' '
	stop_cluster &&
	expect_exit 1 snapshot -c "$CONF" -r "$REPO" --metrics-file textfile/cutsnap.prom &&
	python3 "$_lib_dir/scrape.py" file textfile/cutsnap.prom m.json &&
	expect_eq "$(val m "cutsnap_snapshot_success{repo=$REPO}")" 0 success &&
	expect_eq "$(val m "cutsnap_snapshot_id{repo=$REPO}")" 0 id
'

test_expect_success 'config: a bad metrics_addr is one line, exit 2' '
	cp "$CONF" bad.ini &&
	sed -i "s/^metrics_addr = 127.0.0.1:$PA/metrics_addr = localhost/" bad.ini &&
	expect_error 2 status -c bad.ini &&
	err_matches "bad metrics_addr .localhost."
'

test_expect_success '[cluster] metrics_addr for two agents on one host: the second says why' '
	read -r PC < <(free_ports 1) &&
	sed -i "/^metrics_addr/d" "$CONF" &&
	sed -i "/^run_dir/a metrics_addr = 127.0.0.1:$PC" "$CONF" &&
	expect_exit 1 start -c "$CONF" &&
	err_matches "metrics_addr: .*in use.*their own" &&
	cs stop -c "$CONF" >/dev/null
'

test_done

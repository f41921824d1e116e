#!/bin/bash
# The writer lease of an object-store repository: a writer holding it
# (another host's, planted; or a real snapshot held up by a stopped agent
# for longer than the lease lasts without renewal) keeps every other
# writer (snapshot, forget, prune) out with exit 1 while readers go on; an
# expired lease is taken over; a writer removes its lease when done; a
# commit made meanwhile by someone else is never overwritten, and the
# snapshot's id is not printed.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

# shellcheck disable=SC2034 # used inside the test bodies
W1='' NC=''

lease_file () {
	printf 'cutsnap-lease 1\nowner %s\nexpires %s\n' "$1" "$2" >lease.txt
}

test_expect_success 'a cluster and a first snapshot; no lease left behind' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=100 &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_eq "$(s3keys "$BUCKET" repo/lease)" "" "lease objects"
'

test_expect_success 'a live lease of another host: writers refused with exit 11 (locked), readers work' '
	lease_file "otherhost pid 4242" $(( $(date +%s) + 600 )) &&
	s3put "$BUCKET/repo/lease" lease.txt &&
	expect_error 11 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "another writer holds the repository \(otherhost pid 4242\)" &&
	expect_error 11 forget -r "$REPO_URL" --keep-last 1 &&
	err_matches "another writer holds" &&
	expect_error 11 prune -r "$REPO_URL" &&
	err_matches "another writer holds" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 1 "commits" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 1" &&
	expect_ok verify -r "$REPO_URL" &&
	s3req GET "$BUCKET/repo/lease" -o held.txt | tail -n 1 | grep -q "^200$" &&
	cmp held.txt lease.txt
'

test_expect_success 'an expired lease is taken over; the writer removes its own' '
	lease_file "otherhost pid 4242" $(( $(date +%s) - 5 )) &&
	s3put "$BUCKET/repo/lease" lease.txt &&
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 2 "commits" &&
	expect_eq "$(s3keys "$BUCKET" repo/lease)" "" "lease objects"
'

# joins NAME: how many snapshots agent NAME's log says it joined;
# joined_since N: A's count passed N.
joins () { grep -c "): joined (" "run/$1.log"; }
joined_since () { [ "$(joins A)" -gt "$1" ]; }

test_expect_success 'a commit made meanwhile by another writer: nothing committed, no id printed' '
	NC=$(s3count "$BUCKET" repo/commits/) &&
	last=$(s3keys "$BUCKET" repo/commits/ | tail -n 1) &&
	next=$(printf "repo/commits/%020d" $((10#${last##*/} + 1))) &&
	s3req GET "$BUCKET/$last" -o commit.txt | tail -n 1 | grep -q "^200$" &&
	NJ=$(joins A) &&
	kill -STOP "$(agent_pid B)" &&
	{ cs snapshot -c "$CONF" -r "$REPO_URL" -t 60 >"$OUT" 2>"$ERR" & } &&
	W1=$! && BG_PIDS="$BG_PIDS $W1" &&
	wait_for 20 s3keys_has "$BUCKET" repo/lease &&
	# The writer read its base commit before it asked the agents to
	# join (the log of A says so; status would wait on the stopped B): the
	# commit put now is one it has not seen.
	wait_for 30 joined_since "$NJ" &&
	s3put "$BUCKET/$next" commit.txt &&
	kill -CONT "$(agent_pid B)" &&
	{ wait "$W1"; expect_eq "$?" 1 "exit status of the snapshot"; } &&
	err_is_one_line &&
	err_matches "another writer committed ${next#repo/} first; nothing was committed" &&
	expect_eq "$(cat "$OUT")" "" "stdout of the snapshot" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 2" &&
	s3del "$BUCKET/$next" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC" "commits"
'

test_expect_success 'two writers at once: the second is refused while the first holds the lease past its lifetime' '
	NC=$(s3count "$BUCKET" repo/commits/) &&
	kill -STOP "$(agent_pid B)" &&
	{ CUTSNAP_CACHE_DIR=$TEST_DIR/host1 cs snapshot -c "$CONF" -r "$REPO_URL" -t 60 \
	    >w1.out 2>w1.err & } &&
	W1=$! && BG_PIDS="$BG_PIDS $W1" &&
	wait_for 20 s3keys_has "$BUCKET" repo/lease &&
	sleep $((CUTSNAP_S3_LEASE_SECONDS + 2)) &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/host2 expect_error 11 snapshot -c "$CONF" -r "$REPO_URL" &&
	err_matches "another writer holds the repository \([^)]* pid [0-9]+\)" &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/host2 expect_error 11 forget -r "$REPO_URL" --keep-last 1 &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$NC" "commits while the first writer runs" &&
	kill -CONT "$(agent_pid B)" &&
	wait "$W1" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" "$((NC + 1))" "commits after it" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 3 and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" &&
	expect_eq "$(s3keys "$BUCKET" repo/lease)" "" "lease objects"
'

test_expect_success 'the second writer, on a cache of its own, then commits after the first' '
	CUTSNAP_CACHE_DIR=$TEST_DIR/host2 expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 4 and len(set(s[\"id\"] for s in d)) == 4" &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/host1 expect_ok snapshot -c "$CONF" -r "$REPO_URL" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 5 and len(set(s[\"id\"] for s in d)) == 5" &&
	expect_ok verify -r "$REPO_URL"
'

test_done

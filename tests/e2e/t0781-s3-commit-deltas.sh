#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A commit to an object store uploads the manifest's change, not its
# history. The first commit uploads the whole manifest; later ones a
# delta (an SQLite changeset of what the command changed), merged with
# the chain's last deltas while those are not larger than twice it, and
# a whole manifest again only once the deltas reach half of it. So the
# bytes a commit uploads stay flat while the manifest grows, the chain a
# commit names stays short, and readers, a writer with a new cache, and
# forget all see the same repository as before.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

N=24
# snap: a snapshot with -v; its manifest upload ("whole"/"delta" and
# bytes) appended to uploads.
snap () {
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	sed -n "s/^s3: uploaded .*, manifest \([a-z]*\) of \([0-9]*\) bytes$/\1 \2/p" "$ERR" >>uploads &&
	[ -n "$(tail -n 1 uploads)" ]
}

test_expect_success "setup: the first commit uploads the whole manifest" '
	make_config A B && start_cluster &&
	set_balances A=1000 B=1000 &&
	: >uploads && snap &&
	expect_eq "$(cut -d" " -f1 uploads)" whole "first upload"
'

test_expect_success "$N more snapshots, one transfer apart: each uploads a delta, the chain stays short" '
	for i in $(seq 1 $N); do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap || return 1
	done &&
	expect_eq "$(wc -l <uploads)" $((N + 1)) "uploads" &&
	newest_manifest whole.db &&
	W=$(stat -c %s whole.db) &&
	deltas=$(grep -c "^delta " uploads) &&
	wholes=$(grep -c "^whole " uploads) &&
	max=$(sed -n "s/^delta //p" uploads | sort -n | tail -n 1) &&
	first=$(sed -n "s/^delta //p" uploads | head -n 1) &&
	last=$(sed -n "s/^delta //p" uploads | tail -n 1) &&
	say "manifest now $W bytes; $deltas deltas (first $first, last $last, largest $max bytes), $wholes whole" &&
	[ "$deltas" -ge $((N - 4)) ] &&
	[ $((2 * max)) -lt "$W" ] &&
	# Flat: the last single-snapshot delta is not larger than 3x the
	# first, while the manifest grew N-fold in snapshots.
	[ "$last" -le $((3 * first)) ] &&
	chain=$(grep -c "^delta " newest.commit) &&
	say "the newest commit names a manifest and $chain deltas" &&
	[ "$chain" -ge 1 ] && [ "$chain" -le 6 ]
'

test_expect_success 'readers see every snapshot: ls, verify and show of the newest' '
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 1)) and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]" &&
	expect_ok show -r "$REPO_URL" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 2000" &&
	sqlite3 whole.db "select count(*) from snapshots" >n.txt &&
	expect_eq "$(cat n.txt)" $((N + 1)) "snapshots in the rebuilt manifest"
'

test_expect_success 'a writer with a new cache builds the chain and commits a delta' '
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/cache2 snap &&
	expect_eq "$(tail -n 1 uploads | cut -d" " -f1)" delta "upload of the new cache" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 2))"
'

test_expect_success 'forget is a delta of deleted rows; the next snapshot ids continue' '
	expect_ok forget -r "$REPO_URL" --keep-last 3 &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 3" &&
	newest_manifest forgot.db && grep -q "^delta " newest.commit &&
	expect_eq "$(sqlite3 forgot.db "select count(*) from snapshots")" 3 \
	    "snapshots in the rebuilt manifest" &&
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 4 and d[-1][\"id\"] == $((N + 3))" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_done

#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# A commit to an object store uploads the manifest's change, not its
# history. The first commit uploads the whole manifest; every later one
# its own delta (an SQLite changeset of what the command changed) and,
# one commit in 16, an index of the 16 deltas before it, so the bytes a
# commit uploads stay flat however many snapshots the repository keeps.
# Readers, a writer with a new cache, forget and a prune that folds the
# chain into a whole manifest all see the same repository; a damaged or
# missing index is found, not read past.
. "$(dirname "$0")/lib.sh"
test_require S3
. "$_lib_dir/lib-s3.sh"

N=40
# snap: a snapshot with -v; its manifest upload ("whole"/"delta" and
# bytes) appended to uploads.
snap () {
	expect_ok snapshot -c "$CONF" -r "$REPO_URL" -v &&
	sed -n "s/^s3: uploaded .*, manifest \([a-z]*\) of \([0-9]*\) bytes$/\1 \2/p" "$ERR" >>uploads &&
	[ -n "$(tail -n 1 uploads)" ]
}
# mean FROM COUNT: the mean bytes of COUNT uploads from line FROM.
mean () { sed -n "$1,$(($1 + $2 - 1))p" uploads | awk '{ s += $2; n++ } END { if (n) print int(s / n) }'; }
# newest_commit_key: the newest commit's key.
newest_commit_key () { s3keys "$BUCKET" repo/commits/ | grep -E '/[0-9]{20}$' | tail -n 1; }

test_expect_success "setup: the first commit uploads the whole manifest" '
	make_config A B && start_cluster &&
	set_balances A=1000 B=1000 &&
	: >uploads && snap &&
	expect_eq "$(cut -d" " -f1 uploads)" whole "first upload"
'

test_expect_success "$N more snapshots, one transfer apart: each uploads its delta, flat" '
	for i in $(seq 1 $N); do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap || return 1
	done &&
	expect_eq "$(wc -l <uploads)" $((N + 1)) "uploads" &&
	expect_eq "$(grep -c "^delta " uploads)" $N "delta uploads" &&
	newest_manifest whole.db &&
	W=$(stat -c %s whole.db) &&
	first=$(mean 2 16) && last=$(mean $((N - 14)) 16) &&
	say "manifest now $W bytes; mean upload of commits 2-17 $first bytes, of the last 16 $last bytes" &&
	# Each window of 16 holds one index upload; the deltas are the
	# same size: the last window within 1.25x of the first.
	[ $((4 * last)) -le $((5 * first)) ] &&
	# The newest commit names an index of the older deltas and at
	# most 16 itself, and stays small.
	idx=$(sed -n "s/^index [^ ]* [^ ]* [^ ]* \([0-9]*\)$/\1/p" newest.commit) &&
	inline=$(grep -c "^delta " newest.commit) &&
	say "the newest commit: an index of $idx deltas, $inline of its own, $(stat -c %s newest.commit) bytes" &&
	expect_eq $((idx + inline)) $N "deltas in the chain" &&
	[ "$inline" -ge 1 ] && [ "$inline" -le 16 ] &&
	[ "$(stat -c %s newest.commit)" -lt 4096 ] &&
	# The writer'"'"'s cache was current each time: nothing fetched.
	! grep -q "^s3: cache" "$ERR"
'

test_expect_success 'readers see every snapshot: ls, verify and show of the newest' '
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 1)) and all(s[\"status\"] == \"complete\" for s in d)" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]" &&
	expect_ok show -r "$REPO_URL" --sum bal --json &&
	json_check "d[\"sum\"][\"total\"] == 2000" &&
	expect_eq "$(sqlite3 whole.db "select count(*) from snapshots")" $((N + 1)) \
	    "snapshots in the rebuilt manifest"
'

test_expect_success 'a writer with a new cache walks the indexes and commits a delta' '
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/cache2 snap &&
	grep -qx "s3: cache fetched the manifest from the bucket" "$ERR" &&
	expect_eq "$(tail -n 1 uploads | cut -d" " -f1)" delta "upload of the new cache" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 2))"
'

test_expect_success 'a cache some commits behind applies only the deltas after it' '
	for i in 1 2 3; do
		cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap || return 1
	done &&
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null &&
	CUTSNAP_CACHE_DIR=$TEST_DIR/cache2 snap &&
	grep -qx "s3: cache brought up to date by 3 manifest deltas" "$ERR" &&
	! grep -q "cache fetched" "$ERR" &&
	expect_eq "$(tail -n 1 uploads | cut -d" " -f1)" delta "upload of the caught-up cache" &&
	snap && grep -qx "s3: cache brought up to date by 1 manifest deltas" "$ERR" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 7))" &&
	newest_manifest caught.db &&
	expect_eq "$(sqlite3 caught.db "select count(*) from snapshots")" $((N + 7)) \
	    "snapshots in the rebuilt manifest"
'

test_expect_success 'a changed index fails readers, naming it; restored, they read again' '
	k=$(sed -n "s/^index \([^ ]*\) .*/\1/p" newest.commit) && [ -n "$k" ] &&
	s3req GET "$BUCKET/repo/$k" -o idx.good | tail -n 1 | grep -q "^200$" &&
	sed "s/^delta manifests\/0/delta manifests\/9/" idx.good >idx.bad &&
	! cmp -s idx.good idx.bad &&
	s3put "$BUCKET/repo/$k" idx.bad &&
	expect_error 1 ls -r "$REPO_URL" &&
	err_matches "$k does not match its commit .*changed in the bucket" &&
	expect_error 1 verify -r "$REPO_URL" &&
	s3put "$BUCKET/repo/$k" idx.good &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == $((N + 7))"
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
	json_check "len(d) == 4 and d[-1][\"id\"] == $((N + 8))" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'prune folds the chain; what a commit in the grace period names stays' '
	# Every piece so far older than the grace period (20 s), then one
	# commit inside it, which names them: prune deletes the older
	# commits but none of the pieces that one needs.
	t=$(date +%s) && while [ $(($(date +%s) - t)) -lt 25 ]; do sleep 1; done &&
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap &&
	young=$(newest_commit_key) && youngn=$((10#${young##*/})) &&
	pieces=$(s3count "$BUCKET" repo/manifests/) &&
	expect_ok prune -r "$REPO_URL" --grace 20s --force &&
	newest_manifest folded.db &&
	! grep -q "^delta \|^index " newest.commit &&
	expect_eq "$(sqlite3 folded.db "select count(*) from snapshots")" 5 \
	    "snapshots in the folded manifest" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 2 "commits (the young one and the fence)" &&
	expect_eq "$(s3count "$BUCKET" repo/manifests/)" $((pieces + 1)) \
	    "manifest pieces (the young commit names them all)" &&
	expect_ok ls -r "$REPO_URL" --commit "$youngn" --json &&
	json_check "len(d) == 5" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_expect_success 'prune --grace 0 deletes the folded pieces; the next commit is a delta of the fold' '
	expect_ok prune -r "$REPO_URL" --grace 0 --force &&
	expect_eq "$(s3count "$BUCKET" repo/manifests/)" 1 "manifest pieces" &&
	expect_eq "$(s3count "$BUCKET" repo/commits/)" 1 "commits" &&
	cs transfer -c "$CONF" A:bal B:bal 1 >/dev/null && snap &&
	expect_eq "$(tail -n 1 uploads | cut -d" " -f1)" delta "upload after the fold" &&
	# The fence says which state it folded: the writer'"'"'s cache, at
	# that state, is current under it and fetches nothing.
	! grep -q "^s3: cache" "$ERR" &&
	expect_ok ls -r "$REPO_URL" --json &&
	json_check "len(d) == 6 and d[-1][\"id\"] == $((N + 10))" &&
	expect_ok verify -r "$REPO_URL" --json &&
	json_check "d[\"ok\"]"
'

test_done

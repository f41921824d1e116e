#!/bin/bash
# Restore never writes into the repository it reads, and never gives two
# agents one file: data paths are compared by the file they name ("..",
# symlinked directories, hard links), not as text. Before, a data path of
# REPO/manifest.db made restore replace the manifest and exit 0.
. "$(dirname "$0")/lib.sh"

# rconf A_PATH B_PATH: a config with the snapshot's agents at those paths.
rconf () {
	RCONF=$TEST_DIR/r.ini
	printf '[cluster]\nrun_dir = run\n\n[agent A]\ndata = %s\n\n[agent B]\ndata = %s\n' \
	    "$1" "$2" >"$RCONF"
}

# The repository is as it was: the manifest's bytes and every blob.
repo_intact () {
	cmp "$REPO/manifest.db" "$TEST_DIR/manifest.keep" &&
	    expect_eq "$(cd "$REPO" && find . -type f | sort | xargs sha256sum | sha256sum)" \
	    "$REPO_SUM" "repository contents"
}

# refused CODE PATTERN: restore with RCONF exits CODE with one line
# matching PATTERN, and the repository is untouched.
refused () {
	expect_error "$1" restore -r "$REPO" 1 -c "$RCONF" &&
	err_matches "$2" && repo_intact
}

test_expect_success 'setup: a snapshot of A=100 and B=50; agents stopped' '
	make_config A B &&
	start_cluster &&
	set_balances A=100 B=50 &&
	take_snapshot &&
	stop_cluster &&
	sqlite3 "$REPO/manifest.db" "pragma wal_checkpoint(truncate)" >/dev/null &&
	cp "$REPO/manifest.db" "$TEST_DIR/manifest.keep" &&
	REPO_SUM=$(cd "$REPO" && find . -type f | sort | xargs sha256sum | sha256sum) &&
	mkdir -p sub other
'

test_expect_success 'a data path of REPO/manifest.db: refused (exit 2), the manifest intact' '
	rconf repo/manifest.db b.out &&
	refused 2 "agent A: data path .*/repo/manifest.db is inside repository .*restore reads" &&
	expect_ok ls -r "$REPO" --json &&
	json_check "len(d) == 1 and d[0][\"status\"] == \"complete\""
'

test_expect_success 'inside the repository by another spelling: sub/../repo, a missing directory, blobs/' '
	rconf sub/../repo/a.data b.out &&
	refused 2 "agent A: data path .* is inside repository" &&
	rconf missing/dir/../../repo/a.data b.out &&
	refused 2 "agent A: data path .* is inside repository" &&
	rconf a.out repo/blobs/new/b.data &&
	refused 2 "agent B: data path .* is inside repository" &&
	[ ! -e repo/blobs/new ] && [ ! -e missing ] && [ ! -e a.out ]
'

test_expect_success 'inside the repository through a symlinked directory: refused' '
	ln -s repo linkdir &&
	rconf linkdir/manifest.db b.out &&
	refused 2 "agent A: data path .*linkdir/manifest.db is inside repository" &&
	ln -s "$TEST_DIR/repo" sub/deeper &&
	rconf a.out sub/deeper/x.data &&
	refused 2 "agent B: data path .* is inside repository" &&
	[ ! -e a.out ]
'

test_expect_success 'two agents, one file: x.data and sub/../x.data refused (exit 2), nothing written' '
	rconf x.data sub/../x.data &&
	refused 2 "agents A and B: data paths .*x.data and .*sub/../x.data name the same file" &&
	[ ! -e x.data ] &&
	rconf other/../x.data ./x.data &&
	refused 2 "agents A and B: .* name the same file"
'

test_expect_success 'two agents, one file: a symlink, a hard link, a symlinked directory' '
	echo old >one.data &&
	ln -s one.data two.data &&
	rconf one.data two.data &&
	refused 2 "agents A and B: .*one.data and .*two.data name the same file" &&
	rm two.data && ln one.data two.data &&
	rconf one.data two.data &&
	refused 2 "agents A and B: .* name the same file" &&
	ln -s sub subl &&
	rconf sub/three.data subl/three.data &&
	refused 2 "agents A and B: .* name the same file" &&
	expect_eq "$(cat one.data)" old "one.data" &&
	[ ! -e sub/three.data ]
'

test_expect_success 'distinct paths outside the repository, new directories included: restored' '
	rconf new/dir/a.data other/../b.data &&
	expect_ok restore -r "$REPO" 1 -c "$RCONF" &&
	expect_eq "$(dump_val new/dir/a.data bal)/$(dump_val b.data bal)" 100/50 "A/B" &&
	repo_intact
'

test_done

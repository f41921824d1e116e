#!/bin/bash
# The documents' commands: every command shown in a ```console block of
# the README and the guides runs (tests/doctest.py), in order, each
# document in its own home directory, and prints what the document says
# it prints ("..." standing for pids, times and hashes). A drifted size,
# id or message fails here instead of misleading a reader.
. "$(dirname "$0")/lib.sh"

root=$(cd "$_lib_dir/../.." && pwd)
mkdir -p bin && ln -s "$CUTSNAP" bin/cutsnap
export PATH=$TEST_DIR/bin:$PATH

# Every document with a console block is checked; the list is read from
# the tree so that a new guide cannot be left out.
docs=$(cd "$root" && grep -l '^```console' README.md docs/*.md 2>/dev/null)

doc_ok () {
	local doc=$1 home=$TEST_DIR/home-$(basename "$1" .md)
	mkdir -p "$home" &&
	python3 "$root/tests/doctest.py" "$root/$doc" "$home" >"$home.json"
	local rc=$?
	python3 - "$home.json" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["failed"]:
    print("line %d: $ %s" % (f["line"], f["command"]))
    print("  expected:\n    " + "\n    ".join(f["expected"]))
    print("  printed:\n    " + "\n    ".join(f["actual"]))
print("%s: %d commands, %d differ" % (d["doc"], d["commands"], len(d["failed"])))
sys.exit(1 if d["failed"] or d["commands"] == 0 else 0)
PY
	return $rc
}

n=0
for doc in $docs; do
	n=$((n + 1))
	test_expect_success "$doc: every command prints what it shows" \
	    "doc_ok $doc"
	# A document's agents are its own: stop what it left running.
	for p in $(own_pids); do kill "$p" 2>/dev/null; done
done

test_expect_success 'README.md and docs/tutorial.md were among them' '
	echo "$docs" | grep -qx README.md &&
	echo "$docs" | grep -qx docs/tutorial.md &&
	[ "$n" -ge 2 ]
'

test_done

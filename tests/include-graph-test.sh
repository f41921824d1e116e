#!/bin/sh
# include-graph-test.sh - the include-graph check (include-graph.py) on
# tiny fixture trees: it must fail naming a real circle, also one through
# an internal header, and pass a tree without one (a private header
# beside its public one; a circle in agent/, which it leaves out), and
# must fail a room below cmd/ that includes cmd/, and cmd/ including the
# S3 client past the store's backend. TAP.
here=$(cd "$(dirname "$0")" && pwd)
check="$here/include-graph.py"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0

# ok DESCRIPTION STATUS-WANTED [TEXT-WANTED]: run the check on $tree.
ok() {
	n=$((n + 1))
	out=$(python3 "$check" "$tree" 2>&1)
	rc=$?
	if [ "$rc" -eq "$2" ] && { [ -z "$3" ] || printf '%s\n' "$out" |
	    grep -qxF "$3"; }; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1 (status $rc, wanted $2)"
		printf '%s\n' "$out" | sed 's/^/# /'
		fail=1
	fi
}

# mk FILE [INCLUDE...]: FILE under $tree including each INCLUDE.
mk() {
	f=$tree/$1
	shift
	mkdir -p "$(dirname "$f")"
	: >"$f"
	for i; do
		printf '#include "%s"\n' "$i" >>"$f"
	done
}

echo 1..7

tree=$tmp/circle
mk x/a.c a.h
mk x/a.h ../y/b.h
mk y/b.c b.h ../x/a.h
mk y/b.h
ok "a circle across two directories fails, named" 1 \
    "include circle: x/a -> y/b -> x/a"

tree=$tmp/clean
mk x/a.c a.h a_int.h ../y/b.h
mk x/a.h
mk x/a_int.h a.h
mk x/c.c a_int.h
mk y/b.c b.h
mk y/b.h
ok "a tree without a circle passes" 0 \
    "include-graph: 3 modules, 2 edges, no circle"

tree=$tmp/private
mk x/a.c a.h a_int.h
mk x/a.h
mk x/a_int.h a.h ../y/b.h
mk y/b.c b.h ../x/a.h
mk y/b.h
ok "a circle through an internal header fails" 1 \
    "include circle: x/a -> y/b -> x/a"

tree=$tmp/agent
mk agent/a.c b.h
mk agent/a.h
mk agent/b.c a.h
mk agent/b.h a.h
mk agent/a.h b.h
mk lib/u.c u.h
mk lib/u.h
ok "agent/ is left out" 0 "include-graph: 1 modules, 0 edges, no circle"

tree=$tmp/upward
mk cmd/c.c ../tools/t.h
mk cmd/cmd.h
mk tools/t.c t.h ../cmd/cmd.h
mk tools/t.h
ok "tools/ including cmd/ fails, named" 1 "include upward: tools/t -> cmd/cmd"

tree=$tmp/past
mk cmd/c.c ../s3/s3.h ../store/backend.h
mk s3/s3.c s3.h
mk s3/s3.h
mk store/backend.c backend.h ../s3/s3.h
mk store/backend.h
ok "cmd/ including s3/ fails, named" 1 "include past the store: cmd/c -> s3/s3"

tree=$here/..
ok "the source tree has no circle, nothing includes cmd/ from below, cmd/ no s3/" 0 ""

# Every case above ran.
[ "$n" -eq 7 ] || { echo "# ran $n checks, not 7"; fail=1; }
exit $fail

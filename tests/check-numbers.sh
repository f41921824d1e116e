#!/bin/sh
# check-numbers.sh [DIR]: every end-to-end test in DIR (default tests/e2e
# beside this script) is named tNNNN-name.sh and has a number of its own,
# like git's test-lint-duplicates. Prints each offender and exits 1;
# exit 0 when every number is unique.
dir=${1:-$(dirname "$0")/e2e}
[ -d "$dir" ] || { echo "check-numbers: no directory $dir" >&2; exit 2; }
rc=0
bad=$(ls "$dir" | grep '^t.*\.sh$' | grep -v '^t[0-9]\{4\}-[a-z0-9-]*\.sh$')
for f in $bad; do
	echo "check-numbers: $f is not named tNNNN-name.sh" >&2
	rc=1
done
dups=$(ls "$dir" | sed -n 's/^\(t[0-9]\{4\}\)-.*\.sh$/\1/p' | sort | uniq -d)
for n in $dups; do
	echo "check-numbers: $n is used by more than one test:" \
	    $(cd "$dir" && ls "$n"-*.sh) >&2
	rc=1
done
exit $rc

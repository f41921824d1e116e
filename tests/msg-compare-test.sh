#!/bin/sh
# msg-compare-test.sh - no caller decides on an error message's words: a
# strstr/strcmp/strncmp (and their case-blind kin) whose arguments name a
# message (msg, e.msg, e->msg, errmsg, cs_errmsg()) in the C sources of
# the rooms that call others fails, naming the line. A caller decides on
# the error's kind (cs_err_code) or the reply's code instead. A grep, so
# cheap enough for make check; checked on fixtures first so that a broken
# pattern cannot pass the tree by matching nothing. TAP.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0

ROOMS="cmd api agent store coordinator tools lib net proto log crypto s3"
PATTERN='\b(strstr|strcasestr|strn?cmp|strn?casecmp)[[:space:]]*\([^;]*\b((e|err)(\.|->)|cs_)?(err)?msg\b'

# hits ROOT: every matching line under ROOT's rooms, as FILE:LINE:TEXT.
hits() {
	for r in $ROOMS; do
		[ -d "$1/$r" ] || continue
		grep -rnE --include='*.c' --include='*.h' "$PATTERN" "$1/$r"
	done
}

# ok DESCRIPTION ROOT WANTED-COUNT
ok() {
	n=$((n + 1))
	got=$(hits "$2" | wc -l)
	if [ "$got" -eq "$3" ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1 ($got lines, wanted $3)"
		hits "$2" | sed 's/^/# /'
		fail=1
	fi
}

echo 1..3

mkdir -p "$tmp/bad/cmd" "$tmp/bad/api"
printf '%s\n' 'if (strstr(msg, "snapshot") != NULL)' \
    'if (strncmp(e.msg, "insufficient funds", 18) == 0)' >"$tmp/bad/cmd/a.c"
printf '%s\n' 'if (strcmp(cs_errmsg(c), "x") == 0)' >"$tmp/bad/api/b.c"
ok "comparisons on a message are found" "$tmp/bad" 3

mkdir -p "$tmp/clean/cmd"
printf '%s\n' 'if (strcmp(sc.msgs[j].src, s) == 0)' \
    'if (cs_err_code(&e) == CS_E_LOCKED)' \
    'snprintf(out, n, "%s", e.msg);' >"$tmp/clean/cmd/a.c"
ok "other comparisons and uses of a message pass" "$tmp/clean" 0

ok "the source tree compares no message" "$here/.." 0

# Every case above ran.
[ "$n" -eq 3 ] || { echo "# ran $n checks, not 3"; fail=1; }
exit $fail

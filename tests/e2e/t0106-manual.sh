#!/bin/bash
# The manual page lists every subcommand's synopsis exactly as its --help
# prints it (and no other), bash completion completes subcommands, options
# and agent names, and "make install PREFIX=..." installs the binary, the
# manual page and the completion.
. "$(dirname "$0")/lib.sh"

# lib.sh has made the test directory the working directory.
# shellcheck disable=SC2154 # _lib_dir is set by lib.sh
ROOT=$(cd "$_lib_dir/../.." && pwd)
# shellcheck disable=SC2034 # used inside the test bodies
MAN=$ROOT/man/cutsnap.1

# The manual rendered as plain ASCII, one synopsis per line.
render () { LC_ALL=C MANWIDTH=400 man -P cat -l "$1" 2>/dev/null; }
squeeze () { tr -s ' \t' '  ' | sed 's/^ //; s/ $//'; }

# The subcommands listed by "cutsnap --help".
commands () { cs --help | sed -n 's/^  \([a-z]\{1,\}\) .*/\1/p'; }

# The synopses of a --help text: "usage: cutsnap ..." and indented
# "cutsnap ..." lines start one, other indented lines continue it; the
# first blank line ends them.
synopses () {
	awk '/^$/ { exit }
	    /^usage: cutsnap / { if (s != "") print s; s = substr($0, 8); next }
	    /^ +cutsnap / { if (s != "") print s; sub(/^ +/, ""); s = $0; next }
	    { sub(/^ +/, ""); s = s " " $0 }
	    END { if (s != "") print s }'
}

test_expect_success 'the manual page renders without warnings' '
	[ -f "$MAN" ] &&
	render "$MAN" >man.txt &&
	grep -q "^SYNOPSIS" man.txt &&
	LC_ALL=C groff -man -ww -z "$MAN" 2>groff.err &&
	[ ! -s groff.err ] || { cat groff.err; false; }
'

test_expect_success 'every subcommand'"'"'s --help synopsis is in the manual' '
	squeeze <man.txt >man.sq &&
	n=0 &&
	for c in $(commands); do
		cs "$c" --help >help.txt || { say "$c --help failed"; return 1; }
		synopses <help.txt | squeeze >syn.txt &&
		[ -s syn.txt ] || { say "$c: no usage line"; return 1; }
		while read -r line; do
			grep -qF -- "$line" man.sq || { say "not in the manual: $line"; return 1; }
			n=$((n + 1))
		done <syn.txt || return 1
	done &&
	[ "$n" -ge 19 ]
'

test_expect_success 'the manual names no subcommand the binary does not have' '
	sed -n "/^SYNOPSIS/,/^DESCRIPTION/p" man.txt |
	    sed -n "s/^ *cutsnap \([a-z]*\) .*/\1/p" | sort -u >man.cmds &&
	commands | sort -u >bin.cmds &&
	comm -23 man.cmds bin.cmds >extra &&
	[ ! -s extra ] || { cat extra; false; }
'

# complete WORDS...: run the completion function on the command line
# WORDS (the last one is being completed), print the candidates.
complete_words () {
	bash -c '
	source "$1"; shift
	COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
	_cutsnap; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT/completion/cutsnap.bash" "$@"
}

test_expect_success 'completion: subcommands, options, agents, directories' '
	make_config A B &&
	expect_eq "$(complete_words cutsnap sn)" snapshot "cutsnap sn" &&
	expect_eq "$(complete_words cutsnap pr | tr "\n" " ")" "prune " "cutsnap pr" &&
	expect_eq "$(complete_words cutsnap verify --j)" --json "verify --j" &&
	expect_eq "$(complete_words cutsnap forget --keep | tr "\n" " ")" "--keep-last --keep-hourly --keep-daily --keep-weekly --keep-monthly --keep-yearly --keep-within " "forget --keep" &&
	expect_eq "$(complete_words cutsnap get -c "$CONF" "" | tr "\n" " ")" "A B " "agent names" &&
	expect_eq "$(complete_words cutsnap snapshot -c "$CONF" --initiator B)" B "initiator" &&
	expect_eq "$(complete_words cutsnap get -c "$CONF" A "")" "" "KEY: nothing" &&
	mkdir -p repo.d &&
	expect_eq "$(complete_words cutsnap ls -r rep)" repo.d "directories after -r"
'

test_expect_success 'every subcommand of the binary is completed' '
	for c in $(commands); do
		complete_words cutsnap "" | grep -qx "$c" || { say "not completed: $c"; return 1; }
	done
'

test_expect_success 'make install PREFIX=...: binary, manual page, completion' '
	make -s -C "$ROOT" install PREFIX="$TEST_DIR/inst" BIN="$CUTSNAP" >install.out 2>&1 ||
	    { cat install.out; false; } &&
	[ -x inst/bin/cutsnap ] &&
	cmp "$CUTSNAP" inst/bin/cutsnap &&
	cmp "$MAN" inst/share/man/man1/cutsnap.1 &&
	cmp "$ROOT/completion/cutsnap.bash" inst/share/bash-completion/completions/cutsnap &&
	inst/bin/cutsnap --help | grep -q "^  prune " &&
	LC_ALL=C MANPATH="$TEST_DIR/inst/share/man" man -P cat cutsnap 2>/dev/null | grep -q "^NAME"
'

test_done

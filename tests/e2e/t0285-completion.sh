#!/bin/bash
# shellcheck disable=SC2034 # variables used inside test body strings
# Bash completion knows what each command's options mean: `channel`
# takes hold|release once, then SRC and DST (and --reverse there takes
# no value); `load --clients` is a number of clients, not a key file;
# `forget -n` is --dry-run, not an agent name.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$_lib_dir/../.." && pwd)

# complete_words WORDS...: run the completion function on the command
# line WORDS (the last one is being completed), print the candidates on
# one line.
complete_words () {
	bash -c '
	source "$1"; shift
	COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
	_cutsnap; printf "%s\n" "${COMPREPLY[@]}"' _ "$ROOT/completion/cutsnap.bash" "$@" |
	    sed "/^$/d" | sort | tr "\n" " "
}

test_expect_success 'setup: a config with agents A and B, a directory and a file' '
	make_config A B &&
	mkdir -p Adir && : >Afile
'

test_expect_success 'channel: hold|release first, then SRC and DST, then nothing' '
	expect_eq "$(complete_words cutsnap channel -c "$CONF" "")" "hold release " "first word" &&
	expect_eq "$(complete_words cutsnap channel -c "$CONF" hold "")" "A B " "after hold" &&
	expect_eq "$(complete_words cutsnap channel -c "$CONF" hold A "")" "A B " "after hold A" &&
	expect_eq "$(complete_words cutsnap channel -c "$CONF" hold A B "")" "" "after hold A B"
'

test_expect_success 'channel release --reverse: agents follow, not directories' '
	expect_eq "$(complete_words cutsnap channel -c "$CONF" release --reverse A)" "A " "release --reverse A" &&
	expect_eq "$(complete_words cutsnap channel -c "$CONF" release --reverse "")" "A B " "release --reverse"
'

test_expect_success 'load --clients is a number, --initial an amount: no files, no agents' '
	expect_eq "$(complete_words cutsnap load -c "$CONF" --clients A)" "" "load --clients" &&
	expect_eq "$(complete_words cutsnap load -c "$CONF" --initial A)" "" "load --initial" &&
	expect_eq "$(complete_words cutsnap load --no)" "--no-drain " "load --no"
'

test_expect_success 'snapshot -k is still a key file, -r a directory' '
	expect_eq "$(complete_words cutsnap snapshot -k Afi)" "Afile " "snapshot -k" &&
	expect_eq "$(complete_words cutsnap snapshot -r Adi)" "Adir " "snapshot -r"
'

test_expect_success 'snapshot --max-rate is completed and takes a number, not a file' '
	expect_eq "$(complete_words cutsnap snapshot --max-r)" "--max-rate " "snapshot --max-r" &&
	expect_eq "$(complete_words cutsnap snapshot --max-rate Adi)" "" "snapshot --max-rate" &&
	expect_eq "$(complete_words cutsnap snapshot -m Adi)" "" "snapshot -m"
'

test_expect_success 'forget -n is --dry-run: no agent names follow' '
	expect_eq "$(complete_words cutsnap forget -r Adir -n "")" "" "forget -n"
'

test_expect_success '--version is completed' '
	expect_eq "$(complete_words cutsnap --v)" "--version " "cutsnap --v"
'

test_done

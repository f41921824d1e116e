# cutsnap.bash - bash completion for cutsnap: subcommands, their options,
# config files after -c, directories after -r, agent names from the config.
# `make install` puts it where the bash-completion package loads it from
# (PREFIX/share/bash-completion/completions), so an interactive shell needs
# that package (Debian: apt-get install bash-completion); without it,
# source this file from ~/.bashrc. It uses only bash's own builtins.

# The agent names of the config file $1 ([agent NAME] sections).
_cutsnap_agents()
{
	[ -r "$1" ] || return 0
	sed -n 's/^[[:space:]]*\[agent[[:space:]]\{1,\}\([A-Za-z0-9_.-]\{1,\}\)[[:space:]]*\].*/\1/p' "$1"
}

# How many positional words precede the one being completed (options and
# the config file after -c are not counted).
_cutsnap_positionals()
{
	local i words=0
	for ((i = 2; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-c | --config | -t | --timeout | --request-id) i=$((i + 1)) ;;
		-*) ;;
		*) words=$((words + 1)) ;;
		esac
	done
	echo "$words"
}

_cutsnap()
{
	local cur prev cmd conf i opts words
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmds="agent start stop status check put get del add transfer channel
	    deadletter inbox dump init key snapshot ls show verify restore forget prune
	    compact load cert demo help"

	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
		return 0
	fi
	cmd=${COMP_WORDS[1]}
	case $cmd in
	--version | -V | version)
		COMPREPLY=($(compgen -W "--json" -- "$cur"))
		return 0
		;;
	esac

	# The config given so far, for agent names.
	conf=
	for ((i = 2; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-c | --config) conf=${COMP_WORDS[i + 1]} ;;
		--config=*) conf=${COMP_WORDS[i]#--config=} ;;
		esac
	done

	# Options that take an argument; a letter means different things to
	# different commands (-r: --repo, but --reverse for channel; -k:
	# --key, but --clients for load; -n: --name, but --dry-run for forget
	# and prune).
	case $cmd:$prev in
	*:--reverse | forget:-n | prune:-n | *:--dry-run | \
	    *:-j | *:--json | *:-q | *:--quiet | *:-v | *:--verbose | *:--keep | \
	    *:--no-drain)
		;;
	*:-c | *:--config)
		COMPREPLY=($(compgen -f -X '!*.ini' -- "$cur") $(compgen -d -- "$cur"))
		return 0
		;;
	*:-r | *:--repo | restore:--target)
		COMPREPLY=($(compgen -d -- "$cur"))
		return 0
		;;
	load:-s | prune:--grace)
		return 0	# numbers, durations
		;;
	*:--name | *:-i | *:--initiator | *:--agent)
		COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf")" -- "$cur"))
		return 0
		;;
	agent:--log-level | start:--log-level)
		COMPREPLY=($(compgen -W "error warn info debug" -- "$cur"))
		return 0
		;;
	*:-k | *:--key | *:--password-file | key:-N | *:--new-password-file | \
	    agent:-L | agent:--log | snapshot:--metrics-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0
		;;
	*:--password-command)
		COMPREPLY=($(compgen -c -- "$cur"))
		return 0
		;;
	init:-C | init:--compression)
		COMPREPLY=($(compgen -W "zstd none" -- "$cur"))
		return 0
		;;
	*:-t | *:--timeout | *:--request-id | *:--keep-last | *:-l | *:-s | *:--sum | \
	    *:--keep-within | *:-w | *:--seconds | *:--clients | *:--threads | \
	    *:--snapshot-every | *:--max-amount | *:--initial | *:--recheck-age | \
	    snapshot:-m | *:--max-rate | *:--keep-hourly | *:--keep-daily | \
	    *:--keep-weekly | *:--keep-monthly | *:--keep-yearly | \
	    *:--max-age | *:--stuck-after | *:--retry-lock)
		return 0
		;;
	esac

	case $cmd in
	agent) opts="-c --config --name --log-level -L --log --inbox-max-bytes --help" ;;
	start) opts="-c --config -t --timeout --log-level --cert --help" ;;
	stop) opts="-c --config -t --timeout --cert --help" ;;
	status) opts="-c --config -j --json --cert --help" ;;
	check) opts="-c --config -r --repo --max-age --stuck-after -j --json
	    --cert --help" ;;
	put | get) opts="-c --config --cert --help" ;;
	del | add | transfer) opts="-c --config -t --timeout --request-id --cert --help" ;;
	channel) opts="-c --config --reverse -o --overtake --cert --help" ;;
	deadletter) opts="-c --config -a --all -j --json --cert --help" ;;
	inbox) opts="-c --config -j --json --cert --help" ;;
	dump) opts="-j --json --help" ;;
	init) opts="-r --repo -e --encrypt --password-file --password-command -C --compression
	    -j --json --help" ;;
	key) opts="-r --repo --password-file --password-command -N --new-password-file -j --json
	    --retry-lock --help" ;;
	snapshot) opts="-c --config -r --repo --password-file --password-command -i --initiator -t --timeout
	    -k --key --recheck-age -m --max-rate --accept-rollback --metrics-file -j --json
	    -q --quiet -v --verbose --cert --retry-lock --help" ;;
	ls) opts="-r --repo -j --json --retry-lock --help" ;;
	show) opts="-r --repo --password-file --password-command --sum -j --json --retry-lock --help" ;;
	verify) opts="-r --repo --password-file --password-command --no-password -a --all -k --key -j --json -q --quiet
	    -v --verbose --retry-lock --help" ;;
	restore) opts="-r --repo --password-file --password-command -c --config --target --agent -k --key -j --json
	    -q --quiet -v --verbose --retry-lock --help" ;;
	load) opts="-c --config -r --repo --password-file --password-command -s --seconds --clients --threads
	    --snapshot-every --max-amount --initial --no-drain -j --json --cert --help" ;;
	forget) opts="-r --repo -l --keep-last --keep-hourly --keep-daily --keep-weekly
	    --keep-monthly --keep-yearly -w --keep-within --prune -f --force
	    -n --dry-run -j --json --retry-lock --help" ;;
	prune) opts="-r --repo -f --force -n --dry-run -j --json --grace --retry-lock --help" ;;
	cert) opts="-c --config --days --client --role --out --help" ;;
	compact) opts="-c --config -j --json -t --timeout --cert --help" ;;
	demo) opts="--keep --help" ;;
	*) return 0 ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return 0
	fi

	# Positional arguments.
	case $cmd in
	put | get | del | add | inbox)
		# The first positional is an agent.
		words=$(_cutsnap_positionals)
		[ $words -eq 0 ] &&
		    COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf")" -- "$cur"))
		;;
	transfer)
		COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf" | sed 's/$/:/')" -- "$cur"))
		compopt -o nospace 2>/dev/null
		;;
	channel)
		# hold|release, then SRC and DST.
		words=$(_cutsnap_positionals)
		case $words in
		0) COMPREPLY=($(compgen -W "hold release" -- "$cur")) ;;
		1 | 2) COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf")" -- "$cur")) ;;
		esac
		;;
	deadletter)
		# The action first, then agents (AGENT SRC); SEQ is a number.
		words=$(_cutsnap_positionals)
		if [ "$words" -eq 0 ]; then
			COMPREPLY=($(compgen -W "list retry refund" -- "$cur"))
		elif [ "$words" -le 2 ]; then
			COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf")" -- "$cur"))
		fi
		;;
	compact)
		# Any number of agents.
		COMPREPLY=($(compgen -W "$(_cutsnap_agents "$conf")" -- "$cur"))
		;;
	dump)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	key)
		COMPREPLY=($(compgen -W "list add remove passwd rotate" -- "$cur"))
		;;
	esac
	return 0
}
complete -F _cutsnap cutsnap

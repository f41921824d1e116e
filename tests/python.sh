# python.sh - which python3 the test and bench scripts run; sourced.
#
# Debian's interpreter (scripts/deps.sh installs python3), not the first
# python3 in PATH: a version manager's shim found there first (pyenv's is a
# shell script around `pyenv exec`) costs about 0.9 s of CPU a call where
# /usr/bin/python3 costs 0.05-0.08 s, and the helpers call python3 in their
# polling loops, so on such a machine the shim was most of the suite's CPU.
# PATH rather than a shell function, so that `python3 ... &` leaves $! the
# interpreter's own pid, and scripts started from here inherit it.
if [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ]; then
	PATH=/usr/bin:$PATH
	export PATH
fi

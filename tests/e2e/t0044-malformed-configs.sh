#!/usr/bin/env bash
# A table of malformed config files: each gives exit 2 and its own one-line
# error naming the file (and the line, where there is one), for start and
# for status, and starts nothing. (t0002 holds the first cases.)
. "$(dirname "$0")/lib.sh"

# NAME|file content (printf %b escapes)|the error line after "cutsnap: CMD: "
cases='
empty||FILE: no agents; add an \[agent NAME\] section with a data key
outside|data = a.data\n[agent A]\ndata = a.data\n|FILE:1: key .data. outside any section; put it under \[cluster\] or \[agent NAME\]
empty-data|[agent A]\ndata =\n|FILE:2: empty value for .data.
empty-run-dir|[cluster]\nrun_dir =\n[agent A]\ndata = a\n|FILE:2: empty value for .run_dir.
shared-data|[agent A]\ndata = x.data\n[agent B]\ndata = x.data\n|FILE:4: agents A and B share the data file .*/x\.data
bad-channel|[cluster]\nchannels = A-B\n[agent A]\ndata = a\n[agent B]\ndata = b\n|FILE:2: bad channel .A-B.; write SRC>DST
long-name|[agent aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\ndata = a\n|FILE:1: invalid agent name .a{64}. \(1 to 63 of A-Z a-z 0-9 _ \. -\)
duplicate-key|[agent A]\ndata = a\ndata = b\n|FILE:3: duplicate key .data. \(first at line 2\)
nul-byte|[agent A]\ndata = a\0b\n|FILE: not a text file \(contains a NUL byte\)
nameless|[agent ]\ndata = a\n|FILE:1: section \[agent\] needs a name: \[agent NAME\]
'

while IFS='|' read -r name text line; do
	[ -n "$name" ] || continue
	printf '%b' "$text" >"$TEST_DIR/$name.ini"
	want="^cutsnap: (start|status): ${line//FILE/.*/$name\\.ini}\$"
	test_expect_success "config '$name': exit 2 with its own line, nothing started" "
		expect_error 2 start -c \"\$TEST_DIR/$name.ini\" &&
		{ grep -Eq -- '$want' \"\$ERR\" ||
		    { say 'no line matching $want'; show_out; false; }; } &&
		[ -z \"\$(own_pids)\" ] && [ ! -e run ] &&
		expect_error 2 status -c \"\$TEST_DIR/$name.ini\" &&
		grep -Eq -- '$want' \"\$ERR\"
	"
done <<END
$cases
END

test_expect_success 'a config that is a directory: exit 2, one line' '
	mkdir dir.ini &&
	expect_error 2 start -c "$TEST_DIR/dir.ini" &&
	err_matches "^cutsnap: start: .*dir\.ini: not a regular file$"
'

test_done

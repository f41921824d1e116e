#!/usr/bin/env python3
"""doctest.py - run the commands a Markdown document shows, check their output.

Every ```console block of a document is a transcript: a line starting with
"$ " is a command, the lines after it (up to the next command or the end of
the block) are what it prints, stdout and stderr together, as on a
terminal. A command whose text holds a here-document (<<'EOF') goes on up to
its terminator line. All blocks of one document run in order in one bash
process, so a later block sees the files, directories and agents an earlier
one made.

Expected output is matched line by line, trailing blanks ignored:
  - "..." inside a line matches any run of characters (pids, times, hashes);
  - a line that is only "..." matches any number of lines, none included.
Nothing else is special, so a document shows real output.

Usage: doctest.py [--json] DOC.md WORKDIR
Runs in WORKDIR (HOME is set to it) and prints one JSON object:
  {"doc": str, "commands": int, "failed": [{"line": int, "command": str,
   "expected": [str], "actual": [str]}, ...]}
and exits 0 when every command's output matched, 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys

MARK = "@@doctest-command-%d@@"


def blocks(text):
    """(first line number, lines) of each ```console block."""
    out, cur, start = [], None, 0
    for i, line in enumerate(text.split("\n"), 1):
        if cur is None:
            if line.strip() == "```console":
                cur, start = [], i + 1
        elif line.strip() == "```":
            out.append((start, cur))
            cur = None
        else:
            cur.append(line)
    if cur is not None:
        sys.exit("doctest: unterminated ```console block at line %d" % start)
    return out


HEREDOC = re.compile(r"<<-?\s*'?\"?([A-Za-z_]+)'?\"?")


def commands(doc_blocks):
    """[(line, command text, [expected lines])] in document order."""
    cmds = []
    for start, lines in doc_blocks:
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                if line.strip():
                    sys.exit("doctest: line %d: output before any command"
                             % (start + i))
                i += 1
                continue
            text, lineno = line[2:], start + i
            i += 1
            m = HEREDOC.search(text)
            if m:
                while i < len(lines):
                    text += "\n" + lines[i]
                    i += 1
                    if lines[i - 1].strip() == m.group(1):
                        break
            expected = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i].rstrip())
                i += 1
            while expected and not expected[-1]:
                expected.pop()
            cmds.append((lineno, text, expected))
    return cmds


def line_matches(pattern, actual):
    if "..." not in pattern:
        return pattern == actual
    parts = [re.escape(p) for p in pattern.split("...")]
    return re.fullmatch(".*".join(parts), actual, re.S) is not None


def matches(expected, actual):
    """Expected lines (with "..." globs and "..." lines) against actual."""
    memo = {}

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(expected):
            r = j == len(actual)
        elif expected[i] == "...":
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and line_matches(expected[i], actual[j]) \
                and go(i + 1, j + 1)
        memo[key] = r
        return r
    return go(0, 0)


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) != 2:
        sys.exit("usage: doctest.py [--json] DOC.md WORKDIR")
    doc, workdir = args
    with open(doc, encoding="utf-8") as f:
        cmds = commands(blocks(f.read()))
    script = ["cd %s || exit 99" % subprocess.list2cmdline([workdir])]
    for n, (_, text, _) in enumerate(cmds):
        script.append("printf '\\n%s\\n'" % (MARK % n))
        script.append(text)
    script.append("printf '\\n%s\\n'" % (MARK % len(cmds)))
    env = dict(os.environ, HOME=workdir, LC_ALL="C.UTF-8")
    run = subprocess.run(["bash", "-c", "\n".join(script) + "\nwait\n"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, timeout=600)
    text = run.stdout.decode("utf-8", "replace")
    outputs = {}
    pieces = re.split(r"\n?@@doctest-command-(\d+)@@\n", "\n" + text)
    # pieces: [before first mark, n0, out0, n1, out1, ...]
    for k in range(1, len(pieces) - 1, 2):
        outputs[int(pieces[k])] = pieces[k + 1]
    failed = []
    for n, (lineno, cmd, expected) in enumerate(cmds):
        actual = outputs.get(n)
        if actual is None:
            actual_lines = ["(the command never finished: the script "
                            "stopped before it)"]
        else:
            actual_lines = [l.rstrip() for l in actual.split("\n")]
            while actual_lines and not actual_lines[-1]:
                actual_lines.pop()
        if actual is None or not matches(expected, actual_lines):
            failed.append({"line": lineno, "command": cmd,
                           "expected": expected, "actual": actual_lines})
    print(json.dumps({"doc": doc, "commands": len(cmds), "failed": failed}))
    return 1 if failed or not cmds else 0


if __name__ == "__main__":
    sys.exit(main())

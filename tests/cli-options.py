#!/usr/bin/env python3
"""The command line's options, checked against each other.

usage: cli-options.py CUTSNAP ROOT

For every command of the binary CUTSNAP (the dispatch table in
ROOT/cmd/main.c):
  - what it accepts is found by asking it: each short letter and each long
    name any command's table or any document mentions is tried as
    "CMD OPTION x --no-such-option"; an option the command does not know is
    refused as "unknown option 'OPTION'", one it knows is not (the command
    then stops at the unknown last word, before doing anything);
  - every accepted option is listed in the command's --help, and every
    option its --help lists as "-X, --NAME" or "--NAME" is accepted;
  - every long option its --help lists is in man/cutsnap.1, and every one
    it accepts is in the command's line of completion/cutsnap.bash;
  - a short letter means one long option across all commands: in the
    --help texts ("-X, --NAME") and in the option tables of cmd/*.c.
Prints one JSON object: {"commands": N, "options": M, "problems": [...]}
(M: the command/option pairs accepted); exits 1 when there is a problem
or nothing was checked.
"""
import concurrent.futures
import json
import os
import re
import string
import subprocess
import sys

PROBE_END = "--no-such-option-probe"
# Every command takes --help (-h), as the main usage says; its text need
# not list it.
EVERYWHERE = {"-h", "--help"}
# Taken by the object-store session, only with an s3:// repository (the
# probe has none).
S3_ONLY = {"grace", "commit"}


def run(cutsnap, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUTSNAP_")}
    env["HOME"] = os.environ.get("TMPDIR", "/tmp")
    p = subprocess.run([cutsnap] + args, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=env, timeout=30)
    return p.returncode, p.stdout, p.stderr


def commands(root):
    src = open(os.path.join(root, "cmd/main.c")).read()
    return re.findall(r'\{ "([a-z]+)", cmd_\w+, "', src)


def source_tables(root):
    """(file, long name, letter or None) of every option table entry."""
    out = []
    cmddir = os.path.join(root, "cmd")
    for f in sorted(os.listdir(cmddir)):
        if not f.endswith(".c"):
            continue
        src = open(os.path.join(cmddir, f)).read()
        for body in re.findall(r"struct option \w+\[\] = \{(.*?)\};", src,
                               re.S):
            for name, val in re.findall(
                    r'\{\s*"([\w-]+)",\s*\w+,\s*NULL,\s*([^}]+?)\s*\}', body):
                m = re.fullmatch(r"'(.)'", val)
                out.append((f, name, m.group(1) if m else None))
    return out


def long_names(text):
    return set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*[a-z0-9])", text))


def man_text(root):
    t = open(os.path.join(root, "man/cutsnap.1")).read()
    return re.sub(r"\\f[BIRP]", "", t.replace("\\-", "-"))


def completion_lines(root):
    """command -> the words of its case in the completion's opts table."""
    t = open(os.path.join(root, "completion/cutsnap.bash")).read()
    out = {}
    for pats, words in re.findall(r'^\t([a-z |]+)\) opts="([^"]*)"', t, re.M):
        for c in pats.split("|"):
            out[c.strip()] = set(words.split())
    return out


def accepts(cutsnap, cmd, opt):
    rc, out, err = run(cutsnap, [cmd, opt, "x", PROBE_END])
    if rc == 0 and opt in ("-h", "--help"):
        return True
    return ("unknown option '%s'" % opt) not in err


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cutsnap, root = sys.argv[1], sys.argv[2]
    problems = []
    cmds = commands(root)
    tables = source_tables(root)
    comp = completion_lines(root)
    man = man_text(root)

    # Candidates: every letter, every long name of a table, of the
    # manual, of the completion and of any command's help.
    helps = {}
    for c in cmds:
        rc, out, err = run(cutsnap, [c, "--help"])
        if rc != 0 or not out:
            problems.append("%s --help: exit %d, %d bytes" % (c, rc, len(out)))
        helps[c] = out
    longs = {n for _, n, _ in tables} | long_names(man)
    for c in cmds:
        longs |= long_names(helps[c])
    for ws in comp.values():
        longs |= {w[2:] for w in ws if w.startswith("--")}
    cands = ["-" + ch for ch in string.ascii_letters + string.digits]
    cands += ["--" + n for n in sorted(longs)]

    jobs = [(c, o) for c in cmds for o in cands]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda co: accepts(cutsnap, *co), jobs))
    accepted = {c: set() for c in cmds}
    for (c, o), ok in zip(jobs, res):
        if ok and o not in EVERYWHERE:
            accepted[c].add(o)
    # getopt_long takes an unambiguous prefix of a long name (load's
    # "--client" of --clients): a prefix the help does not list as a name
    # of its own is taken for such an abbreviation.
    for c in cmds:
        listed = long_names(helps[c])
        accepted[c] = {o for o in accepted[c] if not (
            o.startswith("--") and o[2:] not in listed and
            any(a != o and a.startswith(o) for a in accepted[c]))}

    meaning = {}  # letter -> {long name: [where]}
    npairs = 0
    for c in cmds:
        h = helps[c]
        pairs = dict(re.findall(r"(?<![\w-])-([A-Za-z0-9]), --([a-z][a-z0-9-]*)",
                                h))
        # The option lines ("  -X, --NAME", "  -X VALUE"), not prose.
        listed_short = set(re.findall(r"^ +-([A-Za-z0-9])\b(?!-)", h, re.M))
        for o in sorted(accepted[c]):
            npairs += 1
            if o.startswith("--"):
                if o[2:] not in long_names(h):
                    problems.append("%s accepts %s; its --help does not list it"
                                    % (c, o))
                elif o not in comp.get(c, set()):
                    problems.append("%s accepts %s; the bash completion does "
                                    "not offer it" % (c, o))
            else:
                if o[1] not in pairs:
                    problems.append("%s accepts %s; its --help does not list it "
                                    "as '%s, --NAME'" % (c, o, o))
                elif "--" + pairs[o[1]] not in accepted[c]:
                    problems.append("%s --help pairs %s with --%s, which it "
                                    "does not accept" % (c, o, pairs[o[1]]))
                if o not in comp.get(c, set()):
                    problems.append("%s accepts %s; the bash completion does "
                                    "not offer it" % (c, o))
        for letter, name in pairs.items():
            meaning.setdefault(letter, {}).setdefault(name, []).append(c)
            if "-" + letter not in accepted[c]:
                problems.append("%s --help lists -%s, which it does not accept"
                                % (c, letter))
        for letter in listed_short - set(pairs):
            if "-" + letter in accepted[c]:
                continue
            # A letter in prose ("-c CONF" of another command) is fine when
            # some command takes it; a listed one nobody takes is stale.
            if not any("-" + letter in accepted[d] for d in cmds):
                problems.append("%s --help shows -%s, which no command accepts"
                                % (c, letter))
        for n in sorted(long_names(h)):
            if n not in long_names(man):
                problems.append("%s --help lists --%s; man/cutsnap.1 does not"
                                % (c, n))
            if n in S3_ONLY or any("--" + n in accepted[d] for d in cmds):
                continue
            problems.append("%s --help lists --%s, which no command accepts"
                            % (c, n))
    for f, name, letter in tables:
        if letter is not None and letter not in ("h",):
            meaning.setdefault(letter, {}).setdefault(name, []).append(
                "cmd/" + f)
    for letter in sorted(meaning):
        if len(meaning[letter]) > 1:
            problems.append("-%s has %d meanings: %s" % (
                letter, len(meaning[letter]),
                "; ".join("--%s (%s)" % (n, ", ".join(sorted(set(w))))
                          for n, w in sorted(meaning[letter].items()))))
    if not cmds or npairs == 0:
        problems.append("nothing checked (%d commands, %d options)"
                        % (len(cmds), npairs))
    print(json.dumps({"commands": len(cmds), "options": npairs,
                      "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

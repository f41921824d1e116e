"""bigmsg.py - large application messages through the python package for
the e2e tests (not a test itself).

usage: bigmsg.py CONF send FROM TO SIZE SEED
       bigmsg.py CONF recv AGENT [consume]

send commits one transaction that sends SIZE bytes drawn from SEED (the
same bytes for the same SEED) from FROM to TO; prints {"ok": true} or
{"ok": false, "error": the exception's class, "message": its text}. recv
waits up to 30 s for AGENT's oldest message and prints {"from": F,
"seq": S, "len": N, "sha256": HEX} ({} when none came); with consume a
transaction consumes it too."""
import hashlib
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import cutsnap  # noqa: E402


def payload(size, seed):
    return random.Random(seed).randbytes(size)


def main(argv):
    conf, cmd = argv[1], argv[2]
    if cmd == "send":
        body = payload(int(argv[5]), int(argv[6]))
        try:
            with cutsnap.connect(conf, argv[3], timeout=60) as c:
                with c.transaction() as t:
                    t.send(argv[4], body)
            out = {"ok": True}
        except (cutsnap.Error, ValueError) as e:
            out = {"ok": False, "error": type(e).__name__,
                   "message": str(e)}
    elif cmd == "recv":
        with cutsnap.connect(conf, argv[3], timeout=60) as c:
            m = c.recv(timeout=30)
            out = {}
            if m is not None:
                out = {"from": m.sender, "seq": m.seq, "len": len(m.payload),
                       "sha256": hashlib.sha256(m.payload).hexdigest()}
                if argv[4:] == ["consume"]:
                    with c.transaction() as t:
                        t.consume(m)
    else:
        sys.exit("unknown command " + cmd)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

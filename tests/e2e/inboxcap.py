"""inboxcap.py - drives application messages through the python package for
the inbox cap tests (not a test itself).

usage: inboxcap.py CONF fill FROM TO MAX TAG SIZE [FIRST]
       inboxcap.py CONF drain AGENT N
       inboxcap.py CONF park AGENT SECONDS

fill sends messages "TAG-i-" (i from FIRST, default 1) padded with "x" to
SIZE bytes from FROM to TO, one transaction each (which also adds 1 to FROM's key "sent"), until
the agent answers Busy or MAX were sent; prints {"sent": K, "busy": M},
M the Busy exception's text or null. drain receives and consumes N
messages at AGENT, one transaction each (which also adds 1 to its key
"got"), waiting up to 30 s for each; prints {"consumed": K, "seqs": [...],
"tags": [...]} (each payload's text up to its padding), stopping early
when none came in time. park connects to AGENT, prints {"parked": true}
once its recv is sent, and waits in recv for SECONDS."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import cutsnap  # noqa: E402


def fill(conf, src, dst, most, tag, size, first):
    sent, busy = 0, None
    with cutsnap.connect(conf, src) as c:
        while sent < most:
            body = ("%s-%d-" % (tag, first + sent)).encode()
            body += b"x" * max(0, size - len(body))
            try:
                with c.transaction() as t:
                    t.add("sent", 1)
                    t.send(dst, body)
            except cutsnap.Busy as e:
                busy = str(e)
                break
            sent += 1
    return {"sent": sent, "busy": busy}


def drain(conf, agent, n):
    seqs, tags = [], []
    with cutsnap.connect(conf, agent) as c:
        while len(seqs) < n:
            m = c.recv(timeout=30)
            if m is None:
                break
            with c.transaction() as t:
                t.add("got", 1)
                t.consume(m)
            seqs.append(m.seq)
            tags.append(m.payload.rstrip(b"x").decode())
    return {"consumed": len(seqs), "seqs": seqs, "tags": tags}


def park(conf, agent, secs):
    with cutsnap.connect(conf, agent) as c:
        print(json.dumps({"parked": True}), flush=True)
        c.recv(timeout=secs)


def main(argv):
    conf, cmd = argv[1], argv[2]
    if cmd == "fill":
        out = fill(conf, argv[3], argv[4], int(argv[5]), argv[6],
                   int(argv[7]), int(argv[8]) if len(argv) > 8 else 1)
    elif cmd == "drain":
        out = drain(conf, argv[3], int(argv[4]))
    elif cmd == "park":
        park(conf, argv[3], float(argv[4]))
        return 0
    else:
        sys.exit("unknown command " + cmd)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

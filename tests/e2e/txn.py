"""txn.py - a client of one agent that speaks the transaction frames
(W_REQ_TXN, W_REQ_GETV) for the e2e tests (not a test itself).

usage: txn.py SOCKET txn [--id HEX32] OP...
       txn.py SOCKET getv KEY
       txn.py SOCKET recv TIMEOUT_MS
       txn.py SOCKET recvget TIMEOUT_MS KEY MARKER
       txn.py SOCKET partial MARKER
       txn.py SOCKET loop N

OP is one of: put K V, del K, add K N, eq K V, absent K, ver K N,
send PEER PAYLOAD, sendn PEER N (a payload of N bytes "x"),
consume FROM SEQ, kind N (an op of unknown kind N, for refusals).
txn prints one JSON object: {"code": C, "adds": [...]} on success,
{"code": 4, "op": I, "reason": R} on a failed condition, else
{"code": C, "message": M}. getv prints {"code": 0, "version": N,
"value": V} or {"code": 3}. recv prints {"code": 0, "from": F, "seq": S,
"id": HEX, "payload": P, "ms": M} (the inbox's oldest message), else
{"code": C, "ms": M}, M the milliseconds the reply took. recvget sends a
recv and a getv of KEY back to back on one connection, creates MARKER
and prints {"recv": C1, "getv": C2, "ms": M}: the codes in the order the
replies came, M the milliseconds until the first.
partial sends the first half of a
transaction's frame, creates MARKER and sleeps until it is killed.
loop commits N transactions {add from -1, add to +1} (keys "from" and
"to") one after the other and prints {"done": D}, D the ones answered
OK before the connection ended. The frame version byte is CS_WIRE from
the environment (the test reads it from cutsnap --version)."""
import json, os, socket, struct, sys, time

W_REQ_TXN, W_REQ_RECV, W_REQ_GETV, W_REPLY = 50, 51, 52, 30
KINDS = {"eq": 1, "absent": 2, "ver": 3, "put": 10, "del": 11, "add": 12,
         "send": 13, "sendn": 13, "consume": 14}
VERSION = int(os.environ["CS_WIRE"])


def b(s):
    return struct.pack("<I", len(s)) + s.encode()


def frame(t, payload):
    return struct.pack("<IBB", len(payload) + 2, VERSION, t) + payload


def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise EOFError("connection closed")
        out += chunk
    return out


def reply(sock):
    ln, _, t = struct.unpack("<IBB", recv_exact(sock, 6))
    p = recv_exact(sock, ln - 2)
    assert t == W_REPLY, t
    code, = struct.unpack_from("<B", p)
    blen, = struct.unpack_from("<I", p, 1)
    return code, p[5:5 + blen]


def ops_payload(args):
    out, n, i = b"", 0, 0
    while i < len(args):
        k = args[i]
        if k == "kind":
            out += struct.pack("<B", int(args[i + 1])) + b("x")
            i += 2
        elif k in ("put", "eq", "send"):
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1]) + \
                b(args[i + 2])
            i += 3
        elif k == "sendn":
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1]) + \
                struct.pack("<I", int(args[i + 2])) + \
                b"x" * int(args[i + 2])
            i += 3
        elif k == "consume":
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1]) + \
                struct.pack("<Q", int(args[i + 2]))
            i += 3
        elif k in ("del", "absent"):
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1])
            i += 2
        elif k == "add":
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1]) + \
                struct.pack("<q", int(args[i + 2]))
            i += 3
        elif k == "ver":
            out += struct.pack("<B", KINDS[k]) + b(args[i + 1]) + \
                struct.pack("<Q", int(args[i + 2]))
            i += 3
        else:
            sys.exit("txn.py: unknown op " + k)
        n += 1
    return struct.pack("<I", n) + out


def txn_result(code, body):
    if code == 0:
        n, = struct.unpack_from("<I", body)
        return {"code": 0,
                "adds": list(struct.unpack_from("<%dq" % n, body, 4))}
    if code == 4:
        i, = struct.unpack_from("<I", body)
        rl, = struct.unpack_from("<I", body, 4)
        return {"code": 4, "op": i, "reason": body[8:8 + rl].decode()}
    return {"code": code, "message": body.decode(errors="replace")}


def main():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    cmd, args = sys.argv[2], sys.argv[3:]
    if cmd == "txn":
        rid = bytes(16)
        if args and args[0] == "--id":
            rid, args = bytes.fromhex(args[1]), args[2:]
        sock.sendall(frame(W_REQ_TXN, rid + ops_payload(args)))
        print(json.dumps(txn_result(*reply(sock))))
    elif cmd == "getv":
        sock.sendall(frame(W_REQ_GETV, b(args[0])))
        code, body = reply(sock)
        if code != 0:
            print(json.dumps({"code": code}))
            return
        ver, = struct.unpack_from("<Q", body)
        vl, = struct.unpack_from("<I", body, 8)
        print(json.dumps({"code": 0, "version": ver,
                          "value": body[12:12 + vl].decode()}))
    elif cmd == "recv":
        t0 = time.monotonic()
        sock.sendall(frame(W_REQ_RECV, struct.pack("<I", int(args[0]))))
        code, body = reply(sock)
        out = {"code": code,
               "ms": int((time.monotonic() - t0) * 1000)}
        if code == 0:
            fl, = struct.unpack_from("<I", body)
            out["from"] = body[4:4 + fl].decode()
            out["seq"], = struct.unpack_from("<Q", body, 4 + fl)
            out["id"] = body[12 + fl:28 + fl].hex()
            pl, = struct.unpack_from("<I", body, 28 + fl)
            out["payload"] = body[32 + fl:32 + fl + pl].decode(
                errors="replace")
            assert len(body) == 32 + fl + pl, "trailing bytes"
        elif body:
            out["message"] = body.decode(errors="replace")
        print(json.dumps(out))
    elif cmd == "recvget":
        t0 = time.monotonic()
        sock.sendall(frame(W_REQ_RECV, struct.pack("<I", int(args[0]))) +
                     frame(W_REQ_GETV, b(args[1])))
        open(args[2], "w").close()
        c1, _ = reply(sock)
        ms = int((time.monotonic() - t0) * 1000)
        c2, _ = reply(sock)
        print(json.dumps({"recv": c1, "getv": c2, "ms": ms}))
    elif cmd == "partial":
        f = frame(W_REQ_TXN, bytes(16) + ops_payload(
            ["put", "half", "1", "put", "other", "2"]))
        sock.sendall(f[:len(f) // 2])
        open(args[0], "w").close()
        while True:
            time.sleep(60)
    elif cmd == "loop":
        done = 0
        pl = bytes(16) + ops_payload(["add", "from", "-1", "add", "to", "1"])
        try:
            for _ in range(int(args[0])):
                sock.sendall(frame(W_REQ_TXN, pl))
                code, _ = reply(sock)
                if code != 0:
                    break
                done += 1
        except (EOFError, OSError):
            pass
        print(json.dumps({"done": done}))
    else:
        sys.exit("txn.py: unknown command " + cmd)


main()

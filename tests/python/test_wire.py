"""The package's encoding against the protocol's byte layout, and its
connection logic against a scripted agent on a socket pair (no cluster)."""

import os
import socket
import struct
import tempfile
import threading
import unittest

import cutsnap
from cutsnap import _wire as w
from cutsnap._conn import Connection


def b(x):
    return struct.pack("<I", len(x)) + x


class Encoding(unittest.TestCase):
    def test_frame_header(self):
        f = w.frame(2, w.W_REQ_GET, b"abc")
        self.assertEqual(f, b"\x05\x00\x00\x00\x02\x03abc")

    def test_txn_ops_byte_by_byte(self):
        t = cutsnap.Transaction()
        t.expect("k", "v").expect("gone", None).expect_version("k", 7)
        t.put("k", b"\x00\x01").delete("d").add("n", -2)
        t.send("B", b"pay").consume("C", 9)
        want = (bytes(16) + struct.pack("<I", 8)
                + b"\x01" + b(b"k") + b(b"v")
                + b"\x02" + b(b"gone")
                + b"\x03" + b(b"k") + struct.pack("<Q", 7)
                + b"\x0a" + b(b"k") + b(b"\x00\x01")
                + b"\x0b" + b(b"d")
                + b"\x0c" + b(b"n") + struct.pack("<q", -2)
                + b"\x0d" + b(b"B") + b(b"pay")
                + b"\x0e" + b(b"C") + struct.pack("<Q", 9))
        self.assertEqual(t.encode(), want)

    def test_consume_takes_a_message(self):
        m = cutsnap.Message("A", 3, bytes(range(16)), b"x")
        t = cutsnap.Transaction().consume(m)
        self.assertEqual(t.encode()[20:],
                         b"\x0e" + b(b"A") + struct.pack("<Q", 3))

    def test_replies_decode(self):
        self.assertEqual(w.txn_ok(struct.pack("<Iqq", 2, 5, -1)), [5, -1])
        self.assertEqual(w.txn_conflict(struct.pack("<I", 1) + b(b"why")),
                         (1, "why"))
        body = b(b"A") + struct.pack("<Q", 4) + bytes(16) + b(b"p")
        self.assertEqual(w.recv_ok(body), ("A", 4, bytes(16), b"p"))
        self.assertEqual(w.getv_ok(struct.pack("<Q", 3) + b(b"v")),
                         (3, b"v"))

    def test_truncated_and_trailing_bodies_are_refused(self):
        with self.assertRaises(w.DecodeError):
            w.txn_ok(struct.pack("<Iq", 2, 5))
        with self.assertRaises(w.DecodeError):
            w.getv_ok(struct.pack("<Q", 3) + b(b"v") + b"x")
        with self.assertRaises(w.DecodeError):
            w.txn_ok(struct.pack("<I", 0xffffffff))

    def test_bad_arguments(self):
        t = cutsnap.Transaction()
        self.assertRaises(ValueError, t.put, "", "v")
        self.assertRaises(ValueError, t.put, "k" * 4097, "v")
        self.assertRaises(ValueError, t.add, "k", 1 << 63)
        self.assertRaises(TypeError, t.add, "k", "1")
        self.assertRaises(TypeError, t.put, 5, "v")
        self.assertRaises(ValueError, t.send, "B", bytes((16 << 20) + 1))
        self.assertEqual(t.encode(), bytes(16) + bytes(4))


class FakeAgent:
    """Answers the frames it reads with the scripted (version, code, body)
    replies, in order, and records the (version, type, payload) read; a
    reply None closes the connection instead."""

    def __init__(self, replies):
        self.ours, theirs = socket.socketpair()
        self.conn = theirs
        self.replies = list(replies)
        self.got = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def _read(self, n):
        d = b""
        while len(d) < n:
            x = self.conn.recv(n - len(d))
            if not x:
                raise EOFError
            d += x
        return d

    def run(self):
        try:
            for rep in self.replies:
                ln, ver, ft = w.header(self._read(6))
                self.got.append((ver, ft, self._read(ln - 2)))
                if rep is None:
                    break
                ver, code, body = rep
                self.conn.sendall(w.frame(ver, w.W_REPLY,
                                          bytes([code]) + b(body)))
        except EOFError:
            pass
        self.conn.close()


# The version the fake agent answers in: this package's own.
V = w.PROTOCOL


class Protocol(unittest.TestCase):
    def conn(self, replies, version=w.PROTOCOL):
        f = FakeAgent(replies)
        self.addCleanup(f.ours.close)
        return f, Connection(f.ours, "A", 5, version)

    def test_commit_results_and_conflict(self):
        f, c = self.conn([(V, w.REPLY_OK, struct.pack("<Iq", 1, 12)),
                          (V, w.REPLY_CONFLICT,
                           struct.pack("<I", 0) + b(b"k is 1"))])
        with c.transaction() as t:
            t.add("n", 2)
        self.assertEqual(t.results, [12])
        self.assertEqual(f.got[0][:2], (V, w.W_REQ_TXN))
        with self.assertRaises(cutsnap.Conflict) as cm:
            with c.transaction() as t2:
                t2.expect("k", "2")
        self.assertEqual((cm.exception.op_index, cm.exception.reason),
                         (0, "k is 1"))
        self.assertFalse(t2.committed)

    def test_block_that_raises_commits_nothing(self):
        f, c = self.conn([(V, w.REPLY_OK, b"v")])
        with self.assertRaises(KeyError):
            with c.transaction() as t:
                t.put("k", "v")
                raise KeyError("app failure")
        self.assertEqual(c.get("k"), b"v")
        f.t.join(5)
        self.assertEqual([g[1] for g in f.got], [w.W_REQ_GET])

    def test_recv_message_timeout_busy_notfound(self):
        msg = b(b"B") + struct.pack("<Q", 7) + bytes(range(16)) + b(b"hi")
        f, c = self.conn([(V, w.REPLY_OK, msg), (V, w.REPLY_TIMEOUT, b""),
                          (V, w.REPLY_BUSY, b"channel A>B is full"),
                          (V, w.REPLY_NOTFOUND, b"no message B:7")])
        m = c.recv(timeout=1.5)
        self.assertEqual((m.sender, m.seq, m.id, m.payload),
                         ("B", 7, bytes(range(16)), b"hi"))
        self.assertEqual(f.got[0][2], struct.pack("<I", 1500))
        self.assertIsNone(c.recv(timeout=0))
        self.assertEqual(f.got[1][2], struct.pack("<I", 0))
        with self.assertRaises(cutsnap.Busy):
            c.commit(cutsnap.Transaction().send("B", "x"))
        with self.assertRaises(cutsnap.NotFound):
            c.commit(cutsnap.Transaction().consume(m))

    def test_version_refusal_names_both(self):
        why = b"agent A speaks protocol 4, this client 3"
        f, c = self.conn([(V, w.REPLY_VERSION, why)])
        with self.assertRaises(cutsnap.VersionMismatch) as cm:
            c.get("k")
        self.assertIn("protocol 4, this client 3", str(cm.exception))
        self.assertTrue(c.closed)
        self.assertRaises(cutsnap.Error, c.get, "k")

    def test_unknown_request_on_protocol_1(self):
        f, c = self.conn([None], version=1)
        with self.assertRaises(cutsnap.VersionMismatch) as cm:
            c.recv(timeout=0)
        self.assertIn("protocol 1", str(cm.exception))

    def test_malformed_reply_closes(self):
        f, c = self.conn([(V, w.REPLY_OK, b"\x01")])
        with self.assertRaises(cutsnap.Error):
            c.commit(cutsnap.Transaction().put("k", "v"))
        self.assertTrue(c.closed)


class Config(unittest.TestCase):
    def test_paths_and_errors(self):
        from cutsnap._config import endpoint
        d = tempfile.mkdtemp()
        p = os.path.join(d, "c.ini")
        with open(p, "w") as f:
            f.write("; test\n[cluster]\nrun_dir = r   ; inline\n"
                    "tls_dir = t\n[agent A]\ndata = a\n"
                    "[agent B]\ndata = b\naddr = h:7101\n")
        real = os.path.realpath(d)
        self.assertEqual(endpoint(p, "A").sock, real + "/r/A.sock")
        self.assertEqual((endpoint(p, "B").addr, endpoint(p, "B").tls_dir),
                         ("h:7101", real + "/t"))
        with self.assertRaises(cutsnap.Error) as cm:
            endpoint(p, "Z")
        self.assertIn("agent Z is not in", str(cm.exception))
        with self.assertRaises(cutsnap.Error):
            endpoint(os.path.join(d, "absent.ini"), "A")


if __name__ == "__main__":
    unittest.main()

"""Frames and payloads of the agent protocol (docs/PROTOCOL.md).

Frame: u32 len (little-endian; counts version + type + payload) | u8
version | u8 type | payload.  Integers are little-endian; "bytes" is a u32
length and the bytes; "str" the same, UTF-8.  This module only encodes and
decodes: it never touches a socket, so tests can check it byte by byte.
"""

import struct

PROTOCOL = 4            # the protocol this package speaks (W_HELLO)
PROTOCOL_OLD = 1        # agents from before the version exchange
HDR_LEN = 6
MAX_VALUE = 16 << 20    # a put's value, a message's payload
MAX_FRAME = MAX_VALUE + 4096
MAX_KEY = 4096
ID_LEN = 16             # request and message ids

# Frame types (client -> agent requests and the agent's reply).
W_REQ_STATUS = 1
W_REQ_PUT = 2
W_REQ_GET = 3
W_REQ_DEL = 4
W_REQ_ADD = 5
W_REPLY = 30
W_REQ_TXN = 50
W_REQ_RECV = 51
W_REQ_GETV = 52
W_HELLO = 60

# Reply codes.
REPLY_OK = 0
REPLY_FAIL = 1
REPLY_BADREQ = 2
REPLY_NOTFOUND = 3
REPLY_CONFLICT = 4
REPLY_TIMEOUT = 5
REPLY_BUSY = 6
REPLY_DENIED = 14
REPLY_VERSION = 15

# Transaction operation kinds.
TXN_EXPECT_EQ = 1
TXN_EXPECT_ABSENT = 2
TXN_EXPECT_VERSION = 3
TXN_PUT = 10
TXN_DEL = 11
TXN_ADD = 12
TXN_SEND = 13
TXN_CONSUME = 14

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_HDR = struct.Struct("<IBB")


class DecodeError(ValueError):
    """A payload that does not hold what its type says."""


def blob(b):
    """b as "bytes": u32 length, then b."""
    return _U32.pack(len(b)) + b


def u32(n):
    return _U32.pack(n)


def u64(n):
    return _U64.pack(n)


def i64(n):
    return _I64.pack(n)


def frame(version, ftype, payload):
    """A whole frame: header and payload."""
    return _HDR.pack(len(payload) + 2, version, ftype) + payload


def header(hdr):
    """(len of version + type + payload, version, type) of a 6-byte header."""
    return _HDR.unpack(hdr)


class Reader:
    """Reads fields from a payload in order; DecodeError past its end."""

    def __init__(self, data):
        self.data = bytes(data)
        self.off = 0

    def _take(self, n):
        if n > len(self.data) - self.off:
            raise DecodeError("payload ends %d bytes early"
                              % (n - (len(self.data) - self.off)))
        b = self.data[self.off:self.off + n]
        self.off += n
        return b

    def u8(self):
        return self._take(1)[0]

    def u32(self):
        return _U32.unpack(self._take(4))[0]

    def u64(self):
        return _U64.unpack(self._take(8))[0]

    def i64(self):
        return _I64.unpack(self._take(8))[0]

    def raw(self, n):
        return self._take(n)

    def blob(self):
        return self._take(self.u32())

    def str(self):
        try:
            return self.blob().decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError("string is not UTF-8: %s" % e) from None

    def done(self):
        if self.off != len(self.data):
            raise DecodeError("%d bytes after the payload's fields"
                              % (len(self.data) - self.off))


def hello(client_name):
    """W_HELLO's payload: {u32 protocol, str client_name}."""
    return u32(PROTOCOL) + blob(client_name.encode("utf-8"))


def reply(payload):
    """(code, body) of a W_REPLY payload {u8 code, bytes body}."""
    r = Reader(payload)
    code = r.u8()
    body = r.blob()
    r.done()
    return code, body


def txn(ops, req_id=bytes(ID_LEN)):
    """W_REQ_TXN's payload: {16 bytes request id, u32 nops, ops}; ops are
    already encoded (each starts with its u8 kind)."""
    if len(req_id) != ID_LEN:
        raise ValueError("a request id is %d bytes" % ID_LEN)
    return req_id + u32(len(ops)) + b"".join(ops)


def op_expect_eq(key, value):
    return bytes([TXN_EXPECT_EQ]) + blob(key) + blob(value)


def op_expect_absent(key):
    return bytes([TXN_EXPECT_ABSENT]) + blob(key)


def op_expect_version(key, version):
    return bytes([TXN_EXPECT_VERSION]) + blob(key) + u64(version)


def op_put(key, value):
    return bytes([TXN_PUT]) + blob(key) + blob(value)


def op_del(key):
    return bytes([TXN_DEL]) + blob(key)


def op_add(key, delta):
    return bytes([TXN_ADD]) + blob(key) + i64(delta)


def op_send(peer, payload):
    return bytes([TXN_SEND]) + blob(peer.encode("utf-8")) + blob(payload)


def op_consume(sender, seq):
    return bytes([TXN_CONSUME]) + blob(sender.encode("utf-8")) + u64(seq)


def txn_ok(body):
    """The new values of a transaction's adds: {u32 n, n x i64}."""
    r = Reader(body)
    n = r.u32()
    if n > len(body) // 8:
        raise DecodeError("%d results in a body of %d bytes" % (n, len(body)))
    vals = [r.i64() for _ in range(n)]
    r.done()
    return vals


def txn_conflict(body):
    """(op_index, reason) of a REPLY_CONFLICT body."""
    r = Reader(body)
    idx = r.u32()
    reason = r.str()
    r.done()
    return idx, reason


def recv_ok(body):
    """(from, seq, id, payload) of W_REQ_RECV's REPLY_OK body."""
    r = Reader(body)
    sender = r.str()
    seq = r.u64()
    mid = r.raw(ID_LEN)
    payload = r.blob()
    r.done()
    return sender, seq, mid, payload


def getv_ok(body):
    """(version, value) of W_REQ_GETV's REPLY_OK body."""
    r = Reader(body)
    version = r.u64()
    value = r.blob()
    r.done()
    return version, value

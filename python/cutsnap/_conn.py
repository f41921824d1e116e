"""A connection to one agent: blocking request/reply, one at a time.

A connection starts with the version exchange (W_HELLO).  An agent from
before the exchange (protocol 1) closes a connection whose first frame has
another version byte without a word; the package then connects again and
speaks protocol 1.  An agent of protocol 1 that does not know a request
(the inbox, on agents built before it) closes the connection: that raises
VersionMismatch naming both versions.

Any failure in the middle of a frame (a timeout, a lost connection) leaves
the stream at an unknown place, so the connection is closed then and every
later call raises Error.  A Connection is not meant for several threads at
once: give each thread its own.
"""

import os
import socket
import ssl
import stat

from . import _wire as w
from ._config import endpoint
from ._errors import Busy, Conflict, Error, NotFound, Timeout, \
    VersionMismatch

DEFAULT_TIMEOUT = 30.0          # seconds for a connect or a reply
CLIENT_CERT = "client"          # the CLI's default certificate name
_RECV_SLICE_MS = 60000          # recv(None) waits in slices of this


class _Closed(Error):
    """The agent closed the connection (an Error like any other; _open
    tells it from the rest)."""


def _b(x, what):
    """x as bytes: bytes-like as is, str as UTF-8."""
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    raise TypeError("%s must be bytes or str, not %s"
                    % (what, type(x).__name__))


def _key(k):
    k = _b(k, "key")
    if not k or len(k) > w.MAX_KEY:
        raise ValueError("a key is 1 to %d bytes, this one %d"
                         % (w.MAX_KEY, len(k)))
    return k


def _value(v, what="value"):
    v = _b(v, what)
    if len(v) > w.MAX_VALUE:
        raise ValueError("a %s is at most %d bytes, this one %d"
                         % (what, w.MAX_VALUE, len(v)))
    return v


def _int64(n):
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("delta must be an int, not %s" % type(n).__name__)
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError("delta %d does not fit in 64 bits" % n)
    return n


class Message:
    """One application message from the inbox: sender (the agent that
    sent it), seq (its sequence number on the channel sender->us), id (16
    bytes) and payload (bytes)."""

    __slots__ = ("sender", "seq", "id", "payload")

    def __init__(self, sender, seq, mid, payload):
        self.sender = sender
        self.seq = seq
        self.id = mid
        self.payload = payload

    def __repr__(self):
        return "Message(sender=%r, seq=%d, payload=%r)" % (
            self.sender, self.seq, self.payload[:40])


class Transaction:
    """Operations staged for one atomic commit: conditions (expect...)
    checked first, then writes, sends and consumes, all or nothing.
    Committed by commit() or at the end of a with block that raised
    nothing; after a commit, results holds the new value of each add, in
    order."""

    def __init__(self, conn=None):
        self._conn = conn
        self._ops = []
        self._size = 0
        self.committed = False
        self.results = None

    def _op(self, enc):
        if self.committed:
            raise Error("this transaction is already committed")
        self._ops.append(enc)
        self._size += len(enc)
        return self

    def put(self, key, value):
        return self._op(w.op_put(_key(key), _value(value)))

    def delete(self, key):
        """Delete key; a key that is absent is no conflict."""
        return self._op(w.op_del(_key(key)))

    def add(self, key, delta):
        return self._op(w.op_add(_key(key), _int64(delta)))

    def send(self, peer, payload):
        """Send payload to agent peer's inbox (on the channel us->peer)."""
        if not isinstance(peer, str) or not peer:
            raise TypeError("peer must be an agent's name (a str)")
        return self._op(w.op_send(peer, _value(payload, "payload")))

    def consume(self, msg, seq=None):
        """Take msg (a Message, or a sender's name with seq) out of the
        inbox; the commit fails with NotFound if it is not there."""
        if isinstance(msg, Message):
            sender, seq = msg.sender, msg.seq
        else:
            sender = msg
        if not isinstance(sender, str) or not isinstance(seq, int):
            raise TypeError("consume wants a Message or (sender, seq)")
        return self._op(w.op_consume(sender, seq))

    def expect(self, key, value):
        """Condition: key holds exactly value (value None: key absent)."""
        if value is None:
            return self._op(w.op_expect_absent(_key(key)))
        return self._op(w.op_expect_eq(_key(key), _value(value)))

    def expect_version(self, key, version):
        """Condition: key's version (Connection.get_version) is version;
        0 means the key is absent."""
        if not isinstance(version, int) or not 0 <= version < (1 << 64):
            raise ValueError("a version is an int from 0 to 2**64-1")
        return self._op(w.op_expect_version(_key(key), version))

    def encode(self, req_id=bytes(w.ID_LEN)):
        """The W_REQ_TXN payload of the operations staged so far."""
        return w.txn(self._ops, req_id)

    def commit(self):
        """Commit on the connection that made this transaction; the list
        of the adds' new values."""
        if self._conn is None:
            raise Error("this transaction has no connection; use "
                        "Connection.commit(t)")
        return self._conn.commit(self)

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        if etype is None and not self.committed:
            self.commit()
        return False


class Connection:
    """A connection to one agent.  Use connect() or connect_path()."""

    def __init__(self, sock, agent, timeout, version):
        self._sock = sock
        self.agent = agent              # its name, for messages
        self.timeout = timeout
        self.protocol = version         # the protocol spoken on it

    # --- frames -------------------------------------------------------

    def _broken(self, msg, exc=Error):
        self.close()
        return exc("agent %s: %s" % (self.agent, msg))

    def _settimeout(self, extra_s):
        if self.timeout is None:
            self._sock.settimeout(None)
        else:
            self._sock.settimeout(self.timeout + extra_s)

    def _send(self, ftype, payload, version=None):
        if self._sock is None:
            raise Error("agent %s: the connection is closed" % self.agent)
        if len(payload) + 2 > w.MAX_FRAME:
            raise ValueError("request of %d bytes, at most %d"
                             % (len(payload) + 2, w.MAX_FRAME))
        self._settimeout(0)
        try:
            self._sock.sendall(w.frame(version or self.protocol, ftype,
                                       payload))
        except socket.timeout:
            raise self._broken("timed out sending a request", Timeout) \
                from None
        except OSError as e:
            raise self._broken("connection lost: %s" % (e.strerror or e)) \
                from None

    def _read(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                b = self._sock.recv(min(n - len(buf), 1 << 20))
            except socket.timeout:
                raise self._broken("no reply within the timeout",
                                   Timeout) from None
            except ConnectionResetError:
                raise self._broken("the agent closed the connection",
                                   _Closed) from None
            except OSError as e:
                raise self._broken("connection lost: %s"
                                   % (e.strerror or e)) from None
            if not b:
                raise self._broken("the agent closed the connection",
                                   _Closed)
            buf += b
        return bytes(buf)

    def _reply(self, extra_s=0.0):
        """(code, body) of the next W_REPLY."""
        self._settimeout(extra_s)
        ln, ver, ftype = w.header(self._read(w.HDR_LEN))
        if ln < 2 or ln > w.MAX_FRAME:
            raise self._broken("malformed frame of length %d" % ln)
        payload = self._read(ln - 2)
        if ftype != w.W_REPLY:
            raise self._broken("unexpected frame type %d, expected a "
                               "reply" % ftype)
        try:
            code, body = w.reply(payload)
        except w.DecodeError as e:
            raise self._broken("malformed reply: %s" % e) from None
        if code == w.REPLY_VERSION:
            msg = body.decode("utf-8", "replace")
            raise self._broken(msg, VersionMismatch)
        if ver != self.protocol:
            raise self._broken("reply of protocol %d on a connection of "
                               "protocol %d" % (ver, self.protocol))
        return code, body

    def _call(self, ftype, payload, extra_s=0.0, what=None):
        self._send(ftype, payload)
        try:
            return self._reply(extra_s)
        except _Closed:
            # An agent closes a connection on a request type it does not
            # know: say which, on a connection without the exchange.
            if what is None or self.protocol >= w.PROTOCOL:
                raise
            raise VersionMismatch(
                "agent %s closed the connection on a %s request: it speaks "
                "protocol %d and does not know it (this client speaks %d)"
                % (self.agent, what, self.protocol, w.PROTOCOL)) from None

    def _fail(self, code, body, what):
        """The exception for an unexpected reply code."""
        msg = body.decode("utf-8", "replace").strip()
        if code == w.REPLY_NOTFOUND:
            return NotFound(msg or "%s: not found" % what)
        if code == w.REPLY_BUSY:
            return Busy(msg or "%s: the peer's inbox is full" % what)
        if code == w.REPLY_TIMEOUT:
            return Timeout(msg or "%s: timed out" % what)
        return Error(msg or "agent %s: %s failed (reply code %d)"
                     % (self.agent, what, code))

    # --- keys ---------------------------------------------------------

    def put(self, key, value):
        code, body = self._call(w.W_REQ_PUT,
                                w.blob(_key(key)) + w.blob(_value(value)))
        if code != w.REPLY_OK:
            raise self._fail(code, body, "put")

    def get(self, key):
        """The key's value (bytes), or None when it is absent."""
        code, body = self._call(w.W_REQ_GET, w.blob(_key(key)))
        if code == w.REPLY_NOTFOUND:
            return None
        if code != w.REPLY_OK:
            raise self._fail(code, body, "get")
        return body

    def get_version(self, key):
        """(version, value) of key, (0, None) when it is absent: the
        version for Transaction.expect_version."""
        code, body = self._call(w.W_REQ_GETV, w.blob(_key(key)),
                                what="get_version")
        if code == w.REPLY_NOTFOUND:
            return 0, None
        if code != w.REPLY_OK:
            raise self._fail(code, body, "get_version")
        try:
            return w.getv_ok(body)
        except w.DecodeError as e:
            raise self._broken("malformed get_version reply: %s" % e) \
                from None

    def delete(self, key):
        """Delete key: True, or False when it was absent."""
        code, body = self._call(w.W_REQ_DEL, w.blob(_key(key)))
        if code == w.REPLY_NOTFOUND:
            return False
        if code != w.REPLY_OK:
            raise self._fail(code, body, "delete")
        return True

    def add(self, key, delta):
        """Add delta to the integer key (absent: 0); its new value."""
        code, body = self._call(w.W_REQ_ADD,
                                w.blob(_key(key)) + w.i64(_int64(delta)))
        if code != w.REPLY_OK:
            raise self._fail(code, body, "add")
        try:
            return int(body)
        except ValueError:
            raise self._broken("add replied %r, not a number"
                               % body[:40]) from None

    def status(self):
        """The agent's status: pid, text (its one line) and each of the
        line's NAME=VALUE fields (a number where it is one)."""
        code, body = self._call(w.W_REQ_STATUS, b"")
        if code != w.REPLY_OK:
            raise self._fail(code, body, "status")
        try:
            r = w.Reader(body)
            pid = r.u32()
            text = r.str()
            r.done()
        except w.DecodeError as e:
            raise self._broken("malformed status reply: %s" % e) from None
        st = {}
        for tok in text.split():
            name, eq, val = tok.partition("=")
            if eq:
                st[name] = int(val) if val.isdigit() else val
        st["pid"] = pid
        st["text"] = text
        return st

    # --- transactions and the inbox ------------------------------------

    def transaction(self):
        """A Transaction committed on this connection (use with with)."""
        return Transaction(self)

    def commit(self, t):
        """Apply t atomically.  The new value of each add, in order.
        Conflict (a condition failed), NotFound (a consumed message is not
        in the inbox), Busy (a send met a full inbox) or Error: then
        nothing changed."""
        if t.committed:
            raise Error("this transaction is already committed")
        code, body = self._call(w.W_REQ_TXN, t.encode(),
                                what="transaction")
        try:
            if code == w.REPLY_OK:
                t.results = w.txn_ok(body)
                t.committed = True
                return t.results
            if code == w.REPLY_CONFLICT:
                idx, reason = w.txn_conflict(body)
                raise Conflict("agent %s: transaction operation %d: %s"
                               % (self.agent, idx, reason), idx, reason)
        except w.DecodeError as e:
            raise self._broken("malformed transaction reply: %s" % e) \
                from None
        raise self._fail(code, body, "transaction")

    def recv(self, timeout=None):
        """The oldest message of the inbox not consumed yet (the same one
        again until a transaction consumes it), waiting at most timeout
        seconds (0: do not wait; None: until one comes); None when none
        came in time."""
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0")
        while True:
            if timeout is None:
                ms = _RECV_SLICE_MS
            else:
                ms = min(int(timeout * 1000), 0xffffffff)
            code, body = self._call(w.W_REQ_RECV, w.u32(ms), ms / 1000.0,
                                    what="recv")
            if code == w.REPLY_OK:
                try:
                    return Message(*w.recv_ok(body))
                except w.DecodeError as e:
                    raise self._broken("malformed recv reply: %s" % e) \
                        from None
            if code != w.REPLY_TIMEOUT:
                raise self._fail(code, body, "recv")
            if timeout is not None:
                return None

    # --- lifetime -------------------------------------------------------

    def close(self):
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    @property
    def closed(self):
        return self._sock is None

    def __enter__(self):
        return self

    def __exit__(self, etype, evalue, tb):
        self.close()
        return False

    def __del__(self):
        self.close()


# --- opening -------------------------------------------------------------

def _unix(path, agent, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        s.close()
        raise Error("agent %s is not running (connect %s: %s)"
                    % (agent, path, e.strerror)) from None
    except socket.timeout:
        s.close()
        raise Timeout("timed out connecting to agent %s at %s"
                      % (agent, path)) from None
    except OSError as e:
        s.close()
        raise Error("cannot connect to agent %s (connect %s: %s)"
                    % (agent, path, e.strerror or e)) from None
    return s


def _private(path, what):
    """Refuse, as the CLI does, a key or tls_dir others may read."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise Error("%s %s: %s" % (what, path, e.strerror)) from None
    if mode & 0o077:
        raise Error("%s %s is mode %04o, open to group or others; run: "
                    "chmod %s %s" % (what, path, stat.S_IMODE(mode),
                                     "700" if stat.S_ISDIR(mode) else "600",
                                     path))


def _tls_context(tls_dir, cert):
    if "/" in cert:
        crt, key = cert + ".crt", cert + ".key"
    else:
        crt = os.path.join(tls_dir, cert + ".crt")
        key = os.path.join(tls_dir, cert + ".key")
    ca = os.path.join(tls_dir, "ca.crt")
    _private(tls_dir, "tls_dir")
    _private(key, "private key")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    # The agent's name is checked against its certificate's CN below, as
    # the CLI does; a cluster's addresses need not be in any certificate.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        ctx.load_verify_locations(ca)
        ctx.load_cert_chain(crt, key)
    except (OSError, ssl.SSLError) as e:
        raise Error("cannot load the client certificate %s (%s, %s, %s): %s"
                    % (cert, ca, crt, key,
                       getattr(e, "strerror", None) or e)) from None
    return ctx


def _subject(cert, field):
    vals = [v for rdn in cert.get("subject", ()) for k, v in rdn
            if k == field]
    return vals


def _tcp(addr, agent, tls_dir, cert, timeout):
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise Error("agent %s: bad addr '%s' (want HOST:PORT)" % (agent, addr))
    host = host.strip("[]")
    ctx = _tls_context(tls_dir, cert)
    try:
        raw = socket.create_connection((host, int(port)), timeout=timeout)
    except ConnectionRefusedError as e:
        raise Error("agent %s is not running (connect %s: %s)"
                    % (agent, addr, e.strerror)) from None
    except socket.timeout:
        raise Timeout("timed out connecting to agent %s at %s"
                      % (agent, addr)) from None
    except OSError as e:
        raise Error("cannot connect to agent %s at %s: %s"
                    % (agent, addr, e.strerror or e)) from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        s = ctx.wrap_socket(raw)
    except ssl.SSLCertVerificationError as e:
        raw.close()
        raise Error("refused %s: certificate refused: %s"
                    % (addr, e.verify_message)) from None
    except (OSError, ssl.SSLError) as e:
        raw.close()
        raise Error("agent %s at %s: TLS handshake failed: %s"
                    % (agent, addr, e)) from None
    peer = s.getpeercert()
    cn = _subject(peer, "commonName")
    if cn != [agent]:
        s.close()
        raise Error("refused %s: its certificate is for '%s', not agent %s"
                    % (addr, ",".join(cn), agent))
    # A client's certificate (one with a role) named like the agent is no
    # agent's.
    if _subject(peer, "organizationalUnitName"):
        s.close()
        raise Error("refused %s: its certificate '%s' is a client's, not "
                    "agent %s's" % (addr, agent, agent))
    return s


def _open(ep, timeout, cert, client_name):
    """A Connection to endpoint ep, past the version exchange."""
    from . import __version__

    def sock():
        if ep.sock is not None:
            return _unix(ep.sock, ep.name, timeout)
        return _tcp(ep.addr, ep.name, ep.tls_dir, cert, timeout)

    c = Connection(sock(), ep.name, timeout, w.PROTOCOL)
    name = client_name or "cutsnap-python/" + __version__
    c._send(w.W_HELLO, w.hello(name))
    try:
        code, body = c._reply()
    except _Closed:
        # Closed without a reply: an agent from before the version
        # exchange, which drops a frame of another version byte.
        return Connection(sock(), ep.name, timeout, w.PROTOCOL_OLD)
    if code != w.REPLY_OK:
        c.close()
        raise VersionMismatch(body.decode("utf-8", "replace").strip() or
                              "agent %s refused the version exchange "
                              "(reply code %d)" % (ep.name, code))
    try:
        r = w.Reader(body)
        c.protocol = r.u32()
        c.agent = r.str() or ep.name
        r.done()
    except w.DecodeError as e:
        c.close()
        raise Error("agent %s: malformed reply to the version exchange: %s"
                    % (ep.name, e)) from None
    return c


def connect(config, agent, timeout=DEFAULT_TIMEOUT, cert=None,
            client_name=None):
    """A Connection to agent (its name) of the cluster config at path
    config: its Unix socket, or TCP with mutual TLS when the config gives
    it an addr.  cert names the client certificate in tls_dir (default:
    $CUTSNAP_CLIENT_CERT, else "client"; with a '/', the path of CERT.crt
    and CERT.key).  timeout: seconds for the connect and for each reply
    (None: no limit)."""
    if cert is None:
        cert = os.environ.get("CUTSNAP_CLIENT_CERT") or CLIENT_CERT
    return _open(endpoint(config, agent), timeout, cert, client_name)


def connect_path(sock, timeout=DEFAULT_TIMEOUT, client_name=None):
    """A Connection to the agent listening on the Unix socket sock."""
    from ._config import Endpoint

    sock = os.fspath(sock)
    return _open(Endpoint(sock, sock=sock), timeout, None, client_name)

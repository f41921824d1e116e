"""cutsnap: keep an application's state in a cutsnap agent.

    import cutsnap
    with cutsnap.connect("cluster.ini", "A") as c:
        c.put("k", "v")
        m = c.recv(timeout=5)
        if m is not None:
            with c.transaction() as t:
                t.consume(m)
                t.add("seen", 1)
                t.send("B", m.payload)

Pure Python over the agent protocol (docs/PROTOCOL.md); keys and values
are bytes or str (UTF-8), values come back as bytes.
"""

__version__ = "0.1.0"

from ._conn import Connection, Message, Transaction, connect, connect_path
from ._errors import Busy, Conflict, Error, NotFound, Timeout, \
    VersionMismatch
from ._wire import PROTOCOL

__all__ = [
    "Busy", "Conflict", "Connection", "Error", "Message", "NotFound",
    "PROTOCOL", "Timeout", "Transaction", "VersionMismatch", "connect",
    "connect_path",
]

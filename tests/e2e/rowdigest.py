"""rowdigest.py DB ID: recompute snapshot ID's unkeyed manifest digest
(store/digest.c) and store it, as someone with write access to the
repository but without its password can."""
import sqlite3
import struct
import sys

TABLES = [
    ("snapshots", "SELECT id, started_at, initiator, config FROM snapshots "
     "WHERE id = ?1"),
    ("agents", "SELECT name, data_path, size, sha256 FROM agents "
     "WHERE snapshot_id = ?1 ORDER BY name, data_path, size, sha256"),
    ("agent_chunks", "SELECT agent, idx, offset, size, sha256 FROM "
     "agent_chunks WHERE snapshot_id = ?1 "
     "ORDER BY agent, idx, offset, size, sha256"),
    ("watermarks", "SELECT agent, kind, peer, seq FROM watermarks "
     "WHERE snapshot_id = ?1 ORDER BY agent, kind, peer, seq"),
    ("channels", "SELECT src, dst, applied, sent FROM channels "
     "WHERE snapshot_id = ?1 ORDER BY src, dst, applied, sent"),
    ("messages", "SELECT src, dst, seq, data, sha256 FROM messages "
     "WHERE snapshot_id = ?1 ORDER BY src, dst, seq, data, sha256"),
]


def field(h, t, b):
    h.update(bytes([t]) + struct.pack("<Q", len(b)) + b)


def value(h, v):
    if isinstance(v, int):
        field(h, 1, struct.pack("<q", v))
    elif isinstance(v, str):
        field(h, 3, v.encode())
    elif isinstance(v, bytes):
        field(h, 4, v)
    elif v is None:
        field(h, 5, b"")
    else:
        sys.exit("rowdigest: a float column is not reproduced")


def main():
    import hashlib
    db = sqlite3.connect(sys.argv[1])
    sid = int(sys.argv[2])
    h = hashlib.sha256()
    field(h, 0, b"cutsnap-manifest-digest-3")
    for name, q in TABLES:
        field(h, 0, name.encode())
        for row in db.execute(q, (sid,)):
            h.update(b"R")
            for v in row:
                value(h, v)
    db.execute("UPDATE snapshots SET digest = ? WHERE id = ?",
               (h.hexdigest(), sid))
    db.commit()


main()

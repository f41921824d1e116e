#!/usr/bin/env python3
"""check: once the services have caught up (waiting at most TIMEOUT
seconds), every order 1..N is held exactly once at each stage: placed,
reserved, invoiced; each stage counted N and the quantities agree.
Prints one JSON object; exit status 0 when it all holds, 1 otherwise."""

import json
import sys
import time

import cutsnap

STAGES = (("orders", "order/", "orders"), ("inventory", "reserved/",
          "reserved"), ("billing", "invoice/", "invoices"))


def counts(conns):
    out = {}
    for agent, _, total in STAGES:
        c = conns[agent]
        cnt = c.get(total + ".count")
        qty = c.get(("billed" if agent == "billing" else total) + ".qty")
        out[agent] = (int(cnt or 0), int(qty or 0))
    return out


def main():
    conf, n = sys.argv[1], int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 120
    conns = {a: cutsnap.connect(conf, a) for a, _, _ in STAGES}
    end = time.monotonic() + timeout
    while True:
        got = counts(conns)
        if all(cnt >= n for cnt, _ in got.values()) or \
                time.monotonic() > end:
            break
        time.sleep(0.2)
    missing = {}
    checked = 0
    for agent, prefix, _ in STAGES:
        miss = [i for i in range(1, n + 1)
                if conns[agent].get("%s%d" % (prefix, i)) is None]
        checked += n
        missing[agent] = miss[:10]
    want_qty = sum(1 + i % 5 for i in range(1, n + 1))
    ok = (checked == 3 * n and n > 0 and
          all(not m for m in missing.values()) and
          all(cnt == n and qty == want_qty for cnt, qty in got.values()))
    print(json.dumps({"ok": ok, "orders": n, "checked": checked,
                      "want_qty": want_qty,
                      "counts": {a: {"count": c, "qty": q}
                                 for a, (c, q) in got.items()},
                      "missing": missing}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

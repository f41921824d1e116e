#!/usr/bin/env python3
"""orders: places orders 1..N (order/ID, the totals) and sends each to
inventory, one transaction per order.  Run again after a crash or a
restore it places exactly the orders its agent does not hold."""

import sys

import cutsnap
from common import connection, log

SKUS = ("apple", "pear", "plum")


def main():
    conf, n = sys.argv[1], int(sys.argv[2])
    c = connection(conf, "orders", "orders")
    i = 1
    while i <= n:
        sku, qty = SKUS[i % len(SKUS)], 1 + i % 5
        msg = "%d %s %d" % (i, sku, qty)
        try:
            with c.transaction() as t:
                t.expect("order/%d" % i, None)     # placed once
                t.put("order/%d" % i, msg)
                t.add("orders.count", 1)
                t.add("orders.qty", qty)
                t.send("inventory", msg)
        except cutsnap.Conflict:
            pass                # placed before a crash or a restore
        except cutsnap.Busy:
            continue            # inventory's inbox is full: again
        except cutsnap.Error as e:
            log("orders", "%s; connecting again" % e)
            c.close()
            c = connection(conf, "orders", "orders")
            continue
        i += 1
    log("orders", "%d orders placed" % n)


if __name__ == "__main__":
    main()

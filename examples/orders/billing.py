#!/usr/bin/env python3
"""billing: one invoice per reserved order (invoice/ID, the totals)."""

import sys

from common import parse, serve


def apply(t, m):
    order, sku, qty = parse(m.payload)
    t.put("invoice/" + order, m.payload)
    t.add("invoices.count", 1)
    t.add("billed.qty", qty)


if __name__ == "__main__":
    serve(sys.argv[1], "billing", "billing", apply)

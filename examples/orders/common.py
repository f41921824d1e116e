"""What the Python services of the orders example share: a connection
that comes back after its agent restarts, and the message format
("ORDER SKU QTY", ASCII)."""

import sys
import time

import cutsnap


def log(who, msg):
    print("%s: %s" % (who, msg), file=sys.stderr, flush=True)


def connection(conf, agent, who):
    """A connection to agent, retried while the agent is down (it is
    killed and restarted on purpose by run.sh)."""
    while True:
        try:
            return cutsnap.connect(conf, agent)
        except cutsnap.Error as e:
            log(who, "waiting for agent %s: %s" % (agent, e))
            time.sleep(0.2)


def parse(payload):
    order, sku, qty = payload.decode("ascii").split()
    return order, sku, int(qty)


def serve(conf, agent, who, apply):
    """The service loop: receive the oldest message, apply it with a
    transaction that consumes it (apply stages the rest), forever.  A
    message applied and consumed in one transaction is applied once, also
    when this process or its agent dies at any point."""
    c = connection(conf, agent, who)
    while True:
        try:
            m = c.recv(timeout=1)
            if m is None:
                continue
            with c.transaction() as t:
                t.consume(m)
                apply(t, m)
        except cutsnap.NotFound:
            pass    # consumed already: the same message came again
        except cutsnap.Busy:
            time.sleep(0.05)    # the next stage's inbox is full: later
        except cutsnap.Error as e:
            log(who, "%s; connecting again" % e)
            c.close()
            c = connection(conf, agent, who)

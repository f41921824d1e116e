"""Where an agent of a cluster config listens, read as the CLI reads it.

Only what a client needs: [cluster] run_dir (default run/ beside the
config) and tls_dir, and [agent NAME] addr.  An agent with an addr is
reached over TCP with mutual TLS; the others on run_dir/NAME.sock.  The
config's other checks are the CLI's business (cutsnap start refuses a bad
config before any agent runs).
"""

import configparser
import os

from ._errors import Error


class Endpoint:
    """How to reach one agent: sock (a Unix socket path) or addr
    (HOST:PORT, with tls_dir holding ca.crt and the client's
    certificate)."""

    def __init__(self, name, sock=None, addr=None, tls_dir=None):
        self.name = name
        self.sock = sock
        self.addr = addr
        self.tls_dir = tls_dir


def _read(path):
    # Inline comments as libinih reads them: a ';' after whitespace.
    cp = configparser.ConfigParser(interpolation=None,
                                   comment_prefixes=("#", ";"),
                                   inline_comment_prefixes=(";",),
                                   strict=True)
    try:
        with open(path, encoding="utf-8") as f:
            cp.read_file(f, source=path)
    except OSError as e:
        raise Error("cannot read config %s: %s" % (path, e.strerror)) from None
    except (configparser.Error, UnicodeDecodeError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise Error("config %s: %s" % (path, first)) from None
    return cp


def endpoint(config, agent):
    """The Endpoint of agent in the cluster config at path config."""
    config = os.fspath(config)
    cp = _read(config)
    sect = "agent " + agent
    if not cp.has_section(sect):
        names = [s[6:] for s in cp.sections() if s.startswith("agent ")]
        raise Error("agent %s is not in %s (its agents: %s)"
                    % (agent, config, " ".join(names) or "none"))
    base = os.path.realpath(os.path.dirname(os.path.abspath(config)))
    cluster = cp["cluster"] if cp.has_section("cluster") else {}
    run_dir = os.path.join(base, cluster.get("run_dir", "run"))
    tls_dir = cluster.get("tls_dir")
    if tls_dir is not None:
        tls_dir = os.path.join(base, tls_dir)
    addr = cp[sect].get("addr")
    if addr:
        if tls_dir is None:
            raise Error("config %s: [agent %s] has an addr but [cluster] "
                        "has no tls_dir" % (config, agent))
        return Endpoint(agent, addr=addr, tls_dir=tls_dir)
    return Endpoint(agent, sock=os.path.join(run_dir, agent + ".sock"))

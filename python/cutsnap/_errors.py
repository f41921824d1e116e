"""The exceptions of the cutsnap package: one base class, Error, and one
subclass per outcome an application may want to handle on its own."""


class Error(Exception):
    """Anything that failed: a refused request, a lost connection, a bad
    config.  str(e) is one line saying what failed."""


class Conflict(Error):
    """A transaction's condition failed; nothing changed.  op_index is the
    failed operation's position in the transaction, reason the agent's
    words."""

    def __init__(self, message, op_index=None, reason=None):
        super().__init__(message)
        self.op_index = op_index
        self.reason = reason


class NotFound(Error):
    """A transaction consumed a message that is not in the inbox (any
    more); nothing changed."""


class Timeout(Error):
    """No reply, or no connection, within the time allowed."""


class Busy(Error):
    """A transaction's send met a full channel (the peer's inbox is at its
    cap); nothing changed; try again later."""


class VersionMismatch(Error):
    """The agent speaks another protocol version than this package."""

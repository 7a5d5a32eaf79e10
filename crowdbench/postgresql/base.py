"""Django's PostgreSQL backend with a health check that costs no round trip.

With ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before its first use in each
request; the stock check sends ``SELECT 1`` and waits for the answer, one more round trip on every
request of the worker API (about a sixth of a request's time under load). A connection that sits
idle between requests has nothing to read: the server only ever writes to it in answer to a query.
When the server ends the connection (a restart, a failover, an administrator terminating the
backend) it sends a fatal error and closes the socket, and when the server host dies the kernel
closes it; either way the socket turns readable. So the check here asks the kernel, without
waiting, whether the socket has anything to read: if it has (or the connection is already known
to be closed or broken), the connection is not reused and Django opens a new one. What this cannot
see, a peer that vanished without closing (a cut network), the stock check sees only after its own
timeout as well.
"""
from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or getattr(connection, "broken", False):
            return False
        try:
            # Anything to read, or the peer hung up or errored, on an idle connection: not usable.
            return not _has_input(connection.fileno())
        except (OSError, ValueError, base.Database.Error):
            return False


def _has_input(descriptor: int) -> bool:
    """Whether the socket has data, an end of file or an error waiting, without waiting."""
    if hasattr(select, "poll"):  # any descriptor number (select() stops at FD_SETSIZE)
        poller = select.poll()
        poller.register(descriptor, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    readable, _, failed = select.select([descriptor], [], [descriptor], 0)  # Windows has no poll()
    return bool(readable or failed)

"""Django's cached-database sessions, with a database outage told apart from a lost session.

Django's database session store turns any database error while updating a session into
``UpdateError``, which the session middleware answers with 400 ("the session was deleted before the
request completed", as when a concurrent request logged the user out). When the error is the
connection failing (the database restarting or failing over during a request, a login say), that
400 tells the browser its request was wrong, and it does not ask again. Here such errors go on as
what they are, and ``crowdbench.views.server_error`` answers them 503 with ``Retry-After``; a session
that really is gone is still ``UpdateError``. Sessions and their cache keys are the same as with
``django.contrib.sessions.backends.cached_db``.
"""
from __future__ import annotations

from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.base import UpdateError
from django.db import InterfaceError, OperationalError


class SessionStore(cached_db.SessionStore):
    def save(self, must_create: bool = False) -> None:
        try:
            super().save(must_create)
        except UpdateError as error:
            # Django raises UpdateError while handling the database error: that error is its context.
            if isinstance(error.__context__, (OperationalError, InterfaceError)):
                raise error.__context__
            raise

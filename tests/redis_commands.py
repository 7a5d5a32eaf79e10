"""The commands a ``redis.Redis`` client sends, recorded: how many round trips a cache call costs."""
from __future__ import annotations

from contextlib import contextmanager

import pytest


@contextmanager
def commands_sent(client):
    """Within the block, the name of every command ``client``'s class sends, in order."""
    sent = []
    original = type(client).execute_command

    def counted(self, *args, **kwargs):
        sent.append(args[0])
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(client), "execute_command", counted)
        yield sent

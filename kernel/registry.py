"""The one registry style for plug-ins: task types, crowd providers, IRR rankers, text metrics.

A registry maps a name to an entry, in the order the entries were registered. Each registry module
lists its plug-ins one line each::

    PROVIDERS = Registry("crowd provider")
    PROVIDERS.register(LocalProvider)                       # named by its ``name`` attribute
    RANKERS.register("evaluation.rankers.chat_ranking.ChatRankingRanker", name="chat")  # imported on first use

``register`` also works as a class decorator (``@METRICS.register``). An entry given as a dotted path
is imported when first asked for, so listing names never loads a heavy module (torch). ``get`` refuses
an unknown name with :class:`UnknownName`, a service error naming the known ones. ``registered`` adds
an entry for the length of a ``with`` block (tests, plug-ins loaded at run time).

No Django import: any layer may keep a registry.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pkgutil import resolve_name
from typing import Any, Generic, TypeVar

from .errors import ServiceError

T = TypeVar("T")

# Names come from command lines, API bodies and database rows: a refusal repeats at most this much.
SHOWN_NAME_CHARACTERS = 60


class UnknownName(ServiceError, LookupError):
    """No plug-in is registered under this name."""

    status_code = 400

    def __init__(self, *, kind: str, name: object, known: list[str]):
        shown = repr(name)
        if len(shown) > SHOWN_NAME_CHARACTERS:
            shown = shown[:SHOWN_NAME_CHARACTERS] + "…"
        super().__init__(f"unknown {kind} {shown}; known: {', '.join(known) or '(none)'}")
        self.kind = kind
        self.name = name
        self.known = known


@dataclass(frozen=True)
class _Lazy:
    """A dotted path, imported on first use."""

    path: str


def _default_name(entry: Any) -> str:
    return entry.name


class Registry(Generic[T]):
    """Name → entry for one kind of plug-in.

    ``kind`` names the plug-ins in messages ("crowd provider"). ``name_of`` reads the name a
    registered class gives itself (default: its ``name`` attribute); ``build`` turns what is
    registered into the stored entry (default: the class itself; task types keep one instance).
    """

    def __init__(self, kind: str, *, name_of: Callable[[Any], str] = _default_name,
                 build: Callable[[Any], T] | None = None):
        self.kind = kind
        self._name_of = name_of
        self._build = build
        self._entries: dict[str, T | _Lazy] = {}

    def register(self, entry: Any = None, /, *, name: str | None = None) -> Any:
        """Add ``entry`` (a class, or a dotted path to import on first use) under ``name`` (default:
        the name the class gives itself); returns ``entry``, so it serves as a class decorator, with
        or without ``name=``. A name is registered once."""
        if entry is None:
            return lambda decorated: self.register(decorated, name=name)
        self._add(entry, name)
        return entry

    @contextmanager
    def registered(self, entry: Any, /, *, name: str | None = None) -> Iterator[T]:
        """The entry is known inside the block (which receives it as stored) and forgotten after it."""
        added = self._add(entry, name)
        try:
            yield self.get(added)
        finally:
            self._entries.pop(added, None)

    def get(self, name: object) -> T:
        """The entry registered under ``name``; anything else (unknown, not a string) is refused."""
        if not isinstance(name, str) or name not in self._entries:
            raise UnknownName(kind=self.kind, name=name, known=sorted(self._entries))
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = self._entries[name] = self._stored(resolve_name(entry.path), name)
        return entry

    def names(self) -> list[str]:
        """The registered names, in registration order; imports nothing."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs in registration order; imports lazy entries."""
        return [(name, self.get(name)) for name in self._entries]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}: {', '.join(self._entries)}>"

    def _add(self, entry: Any, name: str | None) -> str:
        lazy = isinstance(entry, str)
        if name is None:
            if lazy:
                raise ValueError(f"{self.kind} {entry!r}: an entry given by dotted path needs name=")
            name = self._own_name(entry)
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} {entry!r}: the name must be a non-empty string, not {name!r}")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = _Lazy(entry) if lazy else self._stored(entry, name)
        return name

    def _own_name(self, entry: Any) -> str | None:
        try:
            return self._name_of(entry)
        except AttributeError:
            return None

    def _stored(self, entry: Any, name: str) -> T:
        # A class that names itself must be registered under that name: a dotted path that points at
        # the wrong class is caught when it is first imported.
        own_name = self._own_name(entry)
        if isinstance(own_name, str) and own_name != name:
            raise ValueError(f"{self.kind} {name!r}: {entry!r} names itself {own_name!r}")
        return self._build(entry) if self._build is not None else entry

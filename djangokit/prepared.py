"""Querysets of the hot paths, compiled to SQL once per process and database; each call binds its
parameters only.

On the worker API's "next task → submit" path, building and compiling a queryset with subqueries and
``select_related`` costs more CPU than PostgreSQL spends running it. A query whose shape never
changes (only its ids do) is therefore built once with stand-in values, compiled once, and run
from then on with the real values put in the stand-ins' places: the same SQL the ORM would send,
the same rows back (model instances with ``select_related`` and annotations, or ``values_list`` rows).

Parameters are ``int`` or ``str`` values compared with ``=`` (ids, statuses), or aware ``datetime``
values compared with a date-time column (``expires_at__lte``): a lookup that transforms its value
(``__contains``, ``__iexact`` on some databases) would not show the stand-in unchanged, and compiling
refuses it.

Binding reaches into the ORM's compiler (its ``as_sql``, ``select``, ``col_count`` and converters),
which Django does not promise to keep: it runs only on the Django versions it was checked against
(``COMPILER_INTERNALS_DJANGO``, pinned by ``tests/test_django_internals.py``). On any other version
every query is built and run by the ORM as usual: slower, never wrong.
"""
from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta, timezone

import django
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.transaction import TransactionManagementError
from django.db.models import QuerySet

# Stand-ins: values no real parameter has (an int inside the 32-bit range every id column takes,
# far above any id this platform hands out; a string no form accepts).
_INT_STAND_IN = 2_147_000_000
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1
_STR_STAND_IN = "\x1eprepared-parameter-{}\x1e"
# A date-time long before any this platform stores, one microsecond apart per parameter.
_DATETIME_STAND_IN = datetime(1901, 2, 3, 4, 5, 6, tzinfo=timezone.utc)


# The Django versions (major, minor) whose compiler internals this module and the engine's one-statement
# claim (``annotation.services.engine._insert_if_slot_free``) were checked against. A new version is
# added only after re-checking both (the test names what to run).
COMPILER_INTERNALS_DJANGO = frozenset({(5, 2)})


def compiler_internals_supported() -> bool:
    """Whether the running Django is one the compiler-internals code was checked against."""
    return tuple(django.VERSION[:2]) in COMPILER_INTERNALS_DJANGO


class PreparedQueryError(Exception):
    """The queryset cannot be prepared: a parameter is missing from its SQL or was transformed."""


class _Compiled:
    __slots__ = ("queryset", "compiler", "sql", "params", "slots", "columns", "converters")

    def __init__(self, queryset, compiler, sql, params, slots):
        self.queryset, self.compiler, self.sql, self.params, self.slots = queryset, compiler, sql, params, slots
        # The selected columns never change: their converters are worked out once per connection
        # (the ORM does it on every run) with that connection, as the ORM would.
        self.columns = [column[0] for column in compiler.select[0:compiler.col_count]]
        self.converters = weakref.WeakKeyDictionary()

    def converters_for(self, connection) -> dict:
        converters = self.converters.get(connection)
        if converters is None:
            converters = self.converters[connection] = _copy_with(self.compiler, connection=connection).get_converters(
                self.columns)
        return converters


class PreparedQuery:
    """``build(shape, **params)`` returns the queryset; ``shape`` is any hashable value that changes
    the SQL itself (a task type's joins, say) and each shape is compiled once.

    ``prepared.all(shape, **params)`` is ``list(build(shape, **params))`` (model instances, or the
    rows of a ``values_list``) and ``prepared.first(...)`` its first row or None, without the cost of
    building and compiling; ``prepared.sql(...)`` the SQL and parameters, for a statement of one's own."""

    def __init__(self, build: Callable[..., QuerySet]):
        self.build = build
        # After ``shape``: the parameters, each with its annotation (``str`` ones get a string stand-in).
        self._parameters = list(inspect.signature(build).parameters.values())[1:]
        self.names = [parameter.name for parameter in self._parameters]
        self._compiled: dict[tuple, _Compiled] = {}
        self._lock = threading.Lock()

    def all(self, shape: Hashable = None, *, using: str = DEFAULT_DB_ALIAS, **params) -> list:
        if not compiler_internals_supported():
            return list(self.build(shape, **params).using(using))  # the ORM's own way
        compiled = self._compiled_for(shape, using)
        bound = self._bind(compiled, params, connections[using])
        return [] if bound is None else list(_bound_queryset(compiled, using, bound))

    def first(self, shape: Hashable = None, *, using: str = DEFAULT_DB_ALIAS, **params):
        rows = self.all(shape, using=using, **params)
        return rows[0] if rows else None

    def sql(self, shape: Hashable = None, *, using: str = DEFAULT_DB_ALIAS, **params) -> tuple[str, tuple] | None:
        """The SQL and its bound parameters, to use inside a statement of one's own; None when an id
        is beyond any column's range (nothing can match)."""
        if not compiler_internals_supported():
            for value in params.values():
                if isinstance(value, int) and not _BIGINT_MIN <= value <= _BIGINT_MAX:
                    return None
            sql, bound = self.build(shape, **params).query.get_compiler(using=using).as_sql()
            return sql, tuple(bound)
        compiled = self._compiled_for(shape, using)
        bound = self._bind(compiled, params, connections[using])
        return None if bound is None else (compiled.sql, bound)

    @staticmethod
    def _bind(compiled: _Compiled, params: dict, connection) -> tuple | None:
        bound = list(compiled.params)
        for position, name, base in compiled.slots:
            value, stand_in = params[name], compiled.params[position]
            if type(value) is not base:
                raise TypeError(f"{name} must be {base.__name__}, not {type(value).__name__}")
            if base is datetime:
                if value.utcoffset() is None:
                    raise TypeError(f"{name} must be an aware datetime")
                # As a date-time column's lookup prepares its value (a string on SQLite, say).
                bound[position] = connection.ops.adapt_datetimefield_value(value)
                continue
            if base is int and not _BIGINT_MIN <= value <= _BIGINT_MAX:
                return None  # no row has such an id (as the ORM answers a forged, too large id)
            # The database adapter may have typed the stand-in (psycopg's Int4, say): type the value alike.
            bound[position] = value if type(stand_in) is base else type(stand_in)(value)
        return tuple(bound)

    def _compiled_for(self, shape, using) -> _Compiled:
        connection = connections[using]
        key = (shape, using, connection.vendor, connection.settings_dict["NAME"])
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(key) or self._compile(shape, using)
                self._compiled[key] = compiled
        return compiled

    def _compile(self, shape, using) -> _Compiled:
        stand_ins = {parameter.name: _stand_in(parameter, position)
                     for position, parameter in enumerate(self._parameters)}
        queryset = self.build(shape, **stand_ins)
        if queryset._prefetch_related_lookups:
            raise PreparedQueryError("a queryset with prefetch_related cannot be prepared")
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        # Each stand-in as it shows in the compiled parameters, with the type its values must have.
        by_value = {}
        for name, value in stand_ins.items():
            if isinstance(value, datetime):
                by_value[connections[using].ops.adapt_datetimefield_value(value)] = (name, datetime)
            else:
                by_value[value] = (name, type(value))
        slots = tuple((position, *by_value[value]) for position, value in enumerate(params)
                      if isinstance(value, int | str | datetime) and value in by_value)
        missing = set(self.names) - {name for _position, name, _base in slots}
        if missing:
            raise PreparedQueryError(f"parameters not found unchanged in the SQL: {', '.join(sorted(missing))}")
        return _Compiled(queryset, compiler, sql, tuple(params), slots)



def _stand_in(parameter: inspect.Parameter, position: int) -> int | str | datetime:
    if parameter.annotation in (str, "str"):
        return _STR_STAND_IN.format(position)
    if parameter.annotation in (datetime, "datetime"):
        return _DATETIME_STAND_IN + timedelta(microseconds=position)
    return _INT_STAND_IN + position


def _copy_with(original, **attributes):
    """A shallow copy of ``original`` with ``attributes`` replaced; everything else is shared, read only.
    Not ``copy.copy``: a queryset's pickling state, which it goes through, runs the query."""
    copied = object.__new__(type(original))
    copied.__dict__ = {**original.__dict__, **attributes}
    return copied


def _bound_queryset(compiled: _Compiled, using: str, params: tuple) -> QuerySet:
    """A shallow copy of the prepared queryset whose compiler answers with the stored SQL and these
    params and with the converters already worked out; the ORM's own iterable then turns the rows into
    instances. Shallow copies suffice: the copy never escapes ``PreparedQuery.all`` and iterating
    it reads the query without changing it (``QuerySet._chain`` would clone the whole query, its
    ``select_related`` tree deep-copied, on every run)."""
    connection = connections[using]  # the calling thread's
    if compiled.queryset.query.select_for_update and connection.get_autocommit():
        raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
    converters = compiled.converters_for(connection)
    compiler = _copy_with(compiled.compiler, connection=connection,
                          as_sql=lambda *args, **kwargs: (compiled.sql, params),
                          get_converters=lambda expressions: converters)
    prepared = compiled.queryset
    query = _copy_with(prepared.query, get_compiler=lambda *args, **kwargs: compiler)
    return _copy_with(prepared, _query=query, _db=using, _result_cache=None, _prefetch_done=False)

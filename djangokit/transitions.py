"""A declared transition (``kernel.state_machine``) written to the database.

``move`` is one conditional UPDATE: ``... SET status = target WHERE pk = ... AND status IN (sources)``.
Of two writers that read the same status, only one finds the row still in a source status; the other
is refused and changes nothing. The owner of a field calls these; nothing else writes it.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from django.db import DatabaseError, connections, router, transaction
from django.db.models import F, Model, Q, QuerySet
from django.db.models.sql import UpdateQuery
from django.utils import timezone
from kernel.state_machine import StateMachine

from .prepared import compiler_internals_supported

M = TypeVar("M", bound=Model)


def _values(model: type[Model], steps: Mapping[StateMachine, str], fields: dict[str, Any]) -> tuple[dict, Q]:
    """What the UPDATE sets and the condition on the statuses it starts from."""
    values, condition = dict(fields), Q()
    for machine, event in steps.items():
        transition = machine.transition(event)
        condition &= Q(**{f"{machine.field}__in": sorted(transition.sources)})
        # An event that keeps the status still writes it (to itself): the UPDATE then counts the row.
        values[machine.field] = transition.target if transition.target is not None else F(machine.field)
    # An UPDATE skips ``auto_now``: stamped here as ``save`` would.
    for field in model._meta.concrete_fields:
        if getattr(field, "auto_now", False) and field.name not in values:
            values[field.name] = timezone.now()
    return values, condition


def move(instance: M, machine: StateMachine, event: str, *, also: Mapping[StateMachine, str] | None = None,
         where: Q | None = None, **fields: Any) -> M:
    """Make ``event`` on the stored row of ``instance`` in one conditional UPDATE that also sets
    ``fields``; ``also`` adds transitions of other status fields of the same row (all or none), and
    ``where`` further conditions. Refused (the machine's error, nothing written) when the row is not
    in a source status. ``instance`` then holds the values written (expressions are read back)."""
    return _move(instance, machine, event, also=also, where=where, fields=fields)[0]


def move_reading(instance: M, machine: StateMachine, event: str, *, read: tuple[str, Sequence],
                 also: Mapping[StateMachine, str] | None = None, **fields: Any) -> tuple[M, Any]:
    """``move``, and the value of ``read`` (SQL of one value, and its parameters) as the database is
    just before the UPDATE (the row in its old state, and whatever was committed before the statement):
    (the instance, that value). On PostgreSQL it is one statement, ``UPDATE ... RETURNING (read)``,
    whose subquery sees the statement's snapshot; elsewhere, or on a Django version the compiler code
    was not checked against, ``read`` is a statement of its own just before the UPDATE."""
    return _move(instance, machine, event, also=also, where=None, fields=fields, read=read)


def _move(instance, machine, event, *, also, where, fields, read=None) -> tuple[Any, Any]:
    steps = {machine: event, **(also or {})}
    model = type(instance)
    values, condition = _values(model, steps, fields)
    using = router.db_for_write(model, instance=instance)
    read_value = None
    # The ORM's queryset only when the compiled statement will not do: building it costs as much.
    statement = None if where is not None else _update_statement(model, using, condition, steps, values, instance.pk)
    one_statement = read is not None and connections[using].vendor == "postgresql" and compiler_internals_supported()
    rows = None
    if statement is None:
        rows = model._base_manager.db_manager(using).filter(condition, pk=instance.pk)
        if where is not None:
            rows = rows.filter(where)
        if one_statement:
            query = rows.query.chain(UpdateQuery)
            query.add_update_values(values)
            statement = query.get_compiler(using).as_sql()
    if one_statement:
        sql, params = statement
        with transaction.mark_for_rollback_on_error(using), connections[using].cursor() as cursor:
            cursor.execute(f"{sql} RETURNING ({read[0]})", (*params, *read[1]))
            row = cursor.fetchone()
        updated = row is not None
        read_value = row[0] if updated else None
    else:
        if read is not None:
            with connections[using].cursor() as cursor:
                cursor.execute(read[0], tuple(read[1]))
                read_value = cursor.fetchone()[0]
        updated = _run_update(using, statement, rows, values) > 0
    if not updated:
        stored = model._base_manager.filter(pk=instance.pk).values(*(m.field for m in steps)).first()
        for step_machine, step_event in steps.items():
            current = None if stored is None else stored[step_machine.field]
            if stored is None or current not in step_machine.transitions[step_event].sources:
                raise step_machine.refusal(current, step_event, subject=instance.pk)
        raise machine.refusal(stored[machine.field], event, subject=instance.pk)  # ``where`` did not hold
    expressions = []
    for name, value in values.items():
        if isinstance(value, F) and value.name == name:
            continue  # unchanged
        if hasattr(value, "resolve_expression"):
            expressions.append(name)
        else:
            setattr(instance, name, value)
    if expressions:
        instance.refresh_from_db(fields=expressions)
    return instance, read_value


# --- the conditional UPDATE, compiled once per shape ---------------------------------------------
#
# Every submission moves its assignment, and building and compiling the UPDATE through the ORM cost
# more CPU than PostgreSQL spends running it. A shape (the model, the transitions, which fields are
# set and which of them to NULL) is compiled once by the ORM's compiler with a stand-in id; a call
# then only prepares its values as that compiler does (``get_db_prep_save``) and puts its id in the
# stand-in's place: the same SQL and parameters the ORM would send. Values the compiler would turn into
# SQL of their own (expressions but a field kept as it is, model instances, fields with placeholders
# of their own) and extra ``where`` conditions are left to the ORM, as is any Django version the
# compiler code was not checked against (``compiler_internals_supported``).

_ID_STAND_IN = 2_146_000_000


class _CompiledUpdate:
    __slots__ = ("sql", "where_params", "id_position")

    def __init__(self, sql, where_params, id_position):
        self.sql, self.where_params, self.id_position = sql, where_params, id_position


_compiled_updates: dict[tuple, _CompiledUpdate | None] = {}
_compiled_updates_lock = threading.Lock()


def _update_statement(model: type[Model], using: str, condition: Q, steps: Mapping, values: dict, pk: Any
                      ) -> tuple[str, tuple] | None:
    """The SQL and parameters of ``model._base_manager.filter(condition, pk=pk).update(**values)``, from
    the shape's compiled statement; None when the shape is left to the ORM."""
    if not isinstance(pk, int) or not compiler_internals_supported():
        return None
    connection = connections[using]
    kinds, set_params = [], []
    for name, value in values.items():
        field = model._meta.get_field(name)
        if isinstance(value, F) and value.name == name:
            kinds.append("kept")
            continue
        if (hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save")
                or hasattr(field, "get_placeholder") or field.model._meta.concrete_model is not model._meta.concrete_model):
            return None
        value = field.get_db_prep_save(value, connection=connection)
        if hasattr(value, "as_sql"):
            return None
        kinds.append("null" if value is None else "value")
        if value is not None:
            set_params.append(value)
    key = (model, tuple((machine.field, event) for machine, event in steps.items()), tuple(values), tuple(kinds),
           using, connection.vendor, connection.settings_dict["NAME"])
    compiled = _compiled_updates.get(key, False)
    if compiled is False:
        with _compiled_updates_lock:
            compiled = _compiled_updates[key] = _compile_update(model, using, condition, values, len(set_params))
    if compiled is None:
        return None
    where_params = list(compiled.where_params)
    where_params[compiled.id_position] = pk
    return compiled.sql, (*set_params, *where_params)


def _compile_update(model, using, condition, values, set_count) -> _CompiledUpdate | None:
    """The UPDATE of ``values`` on the row of a stand-in id in ``condition``, compiled by the ORM."""
    query = model._base_manager.filter(condition, pk=_ID_STAND_IN).query.chain(UpdateQuery)
    query.add_update_values(values)
    sql, params = query.get_compiler(using).as_sql()
    if len(params) < set_count:
        return None  # the ORM set a value some other way than as one parameter: left to it
    where_params = params[set_count:]
    positions = [position for position, value in enumerate(where_params) if value == _ID_STAND_IN]
    if len(positions) != 1:
        return None
    return _CompiledUpdate(sql, tuple(where_params), positions[0])


def _run_update(using: str, statement: tuple[str, tuple] | None, rows: QuerySet | None, values: dict) -> int:
    """The rows the compiled ``statement`` updated, or, without one, ``rows.update(**values)``."""
    if statement is None:
        return rows.update(**values)
    with transaction.mark_for_rollback_on_error(using), connections[using].cursor() as cursor:
        cursor.execute(*statement)
        return cursor.rowcount


def save_fields(instance: M, fields: Sequence[str]) -> None:
    """``instance.save(update_fields=fields)`` from the shape's compiled UPDATE (for fields that no
    state machine owns): the same SQL, without the model's save machinery and its signals, which
    nothing listens to on the rows it is used for. ``DatabaseError`` when the row is gone, as ``save``."""
    model = type(instance)
    using = router.db_for_write(model, instance=instance)
    wanted = set(fields)
    # In the model's field order, as ``save`` writes them.
    values = {field.name: field.pre_save(instance, False) for field in model._meta.concrete_fields
              if field.name in wanted and not field.primary_key}
    if len(values) != len(wanted):
        raise ValueError(f"Not fields of {model.__name__} that can be saved: {sorted(wanted - set(values))}")
    statement = _update_statement(model, using, Q(), {}, values, instance.pk)
    rows = None if statement is not None else model._base_manager.db_manager(using).filter(pk=instance.pk)
    if not _run_update(using, statement, rows, values):
        raise DatabaseError("Save with update_fields did not affect any rows.")


def move_all(rows: QuerySet, machine: StateMachine, event: str, **fields: Any) -> int:
    """Make ``event`` on every row of ``rows`` that may make it (one UPDATE; the others are left as
    they are); how many rows moved."""
    values, condition = _values(rows.model, {machine: event}, fields)
    return rows.filter(condition).update(**values)

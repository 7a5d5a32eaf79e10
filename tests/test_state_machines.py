"""Every status field has one declared machine (``kernel.state_machine``), and only its owners write it.

Per machine: every event from every status is allowed or refused as declared, on the stored row
(``djangokit.transitions.move``), a refusal changes nothing; no module but the machine's writers
assigns the field (an AST scan of the production code); the docs draw the same table.
"""
from __future__ import annotations

import ast
import functools
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from annotation.models import (ASSIGNMENT_CONFIRMATION, ASSIGNMENT_REVIEW, ASSIGNMENT_STATUS, ROUND_STATUS, Assignment,
                               CollectionRound)
from annotation.services.engine import request_assignment
from djangokit import transitions
from datasets_app.models import INSTANCE_STATUS, Instance
from kernel.state_machine import StateMachine, Transition, TransitionRefused
from llm.models import LLM_CALL_STATUS, LLMCall
from projects.models import Project
from providers.models import BONUS_PAYMENT_STATUS, PUBLICATION_STATUS, BonusPayment, Publication
from stepruns.models import STEP_RUN_STATUS, StepRun

from .annotation.factories import make_candidate, make_instance, make_round, make_worker

ROOT = Path(settings.BASE_DIR)

# machine → (its model, the docs page that draws it)
MACHINES: dict[StateMachine, tuple[type, str]] = {
    ROUND_STATUS: (CollectionRound, "docs/crowd-work.md"),
    ASSIGNMENT_STATUS: (Assignment, "docs/crowd-work.md"),
    ASSIGNMENT_REVIEW: (Assignment, "docs/crowd-work.md"),
    ASSIGNMENT_CONFIRMATION: (Assignment, "docs/providers.md"),
    INSTANCE_STATUS: (Instance, "docs/pipeline.md"),
    STEP_RUN_STATUS: (StepRun, "docs/llm.md"),
    PUBLICATION_STATUS: (Publication, "docs/providers.md"),
    BONUS_PAYMENT_STATUS: (BonusPayment, "docs/providers.md"),
    LLM_CALL_STATUS: (LLMCall, "docs/llm.md"),
}
NAMES = {machine: f"{model.__name__}.{machine.field}" for machine, (model, _doc) in MACHINES.items()}


def test_every_status_field_of_these_models_has_its_machine():
    for model in {model for model, _doc in MACHINES.values()}:
        fields = {field.name for field in model._meta.concrete_fields
                  if field.choices and field.name in ("status", "review_status", "confirmation")}
        declared = {machine.field for machine, (owner, _doc) in MACHINES.items() if owner is model}
        assert fields == declared, model.__name__
    for machine, (model, _doc) in MACHINES.items():
        choices = {value for value, _label in model._meta.get_field(machine.field).choices}
        assert set(machine.statuses) == choices, NAMES[machine]


# --- the Django-free table ---------------------------------------------------------------------


def test_the_table_refuses_what_it_does_not_draw():
    machine = StateMachine(name="door", statuses=["shut", "open", "gone"], initial=["shut"], writers=["doors"],
                           transitions=[Transition("open", frozenset({"shut"}), "open"),
                                        Transition("knock", frozenset({"shut", "open"}), None)])
    assert machine.target("shut", "open") == "open"
    assert machine.target("open", "knock") == "open"  # an event that keeps the status
    assert machine.allowed_events("shut") == ["open", "knock"] and machine.allowed_events("gone") == []
    with pytest.raises(TransitionRefused, match="cannot open a door that is open") as refused:
        machine.check("open", "open")
    assert (refused.value.status_code, refused.value.event, refused.value.current) == (409, "open", "open")
    with pytest.raises(TransitionRefused, match="unknown door status event 'slam'"):
        machine.check("shut", "slam")
    with pytest.raises(TransitionRefused, match="cannot start as 'open'"):
        machine.check_initial("open")


@pytest.mark.parametrize("bad", [
    dict(transitions=[Transition("go", frozenset({"nowhere"}), "a")]),  # unknown source
    dict(transitions=[Transition("go", frozenset(), "a")]),  # no source
    dict(transitions=[Transition("go", frozenset({"a"}), "b"), Transition("go", frozenset({"b"}), "a")]),  # twice
    dict(initial=["c"]),
    dict(writers=[]),
])
def test_a_table_that_does_not_hold_together_is_refused_when_declared(bad):
    arguments = dict(name="x", statuses=["a", "b"], initial=["a"], writers=["m"],
                     transitions=[Transition("go", frozenset({"a"}), "b")]) | bad
    with pytest.raises(ValueError):
        StateMachine(**arguments)


# --- on the stored row -------------------------------------------------------------------------


def _row(machine: StateMachine, status: str):
    """A stored row of the machine's model whose field is ``status`` (set straight, as a test may)."""
    now = timezone.now()
    if machine is ROUND_STATUS:
        row = make_round(task_type="verification", targets=[make_candidate()], open=False)
    elif machine in (ASSIGNMENT_STATUS, ASSIGNMENT_REVIEW, ASSIGNMENT_CONFIRMATION):
        round = make_round(task_type="verification", targets=[make_candidate()])
        row = request_assignment(round=round, worker=make_worker())
    elif machine is INSTANCE_STATUS:
        row = make_instance(captions=False)
    elif machine is STEP_RUN_STATUS:
        row = StepRun.objects.create(project=Project.objects.create(name="P", slug=f"p-{status}"), kind="k")
    elif machine is PUBLICATION_STATUS:
        row = Publication.objects.create(round=make_round(task_type="verification", targets=[make_candidate()]),
                                         provider="local")
    elif machine is BONUS_PAYMENT_STATUS:
        round = make_round(task_type="verification", targets=[make_candidate()])
        assignment = request_assignment(round=round, worker=make_worker())
        row = BonusPayment.objects.create(assignment=assignment, worker=assignment.worker, provider="local",
                                          amount=Decimal("0.10"), reason="r", token=f"t-{status}")
    else:
        row = LLMCall.objects.create(request_hash="h" * 64, endpoint="chat", model="m", request={}, status="failed")
    forced = {machine.field: status}
    if machine in (ASSIGNMENT_STATUS, ASSIGNMENT_REVIEW) and (status == Assignment.Status.SUBMITTED
                                                              or machine is ASSIGNMENT_REVIEW):
        # A submitted assignment has answers (and only it has a review status): the check constraints.
        forced |= {"status": Assignment.Status.SUBMITTED, "payload": {}, "submitted_at": now}
    if machine is INSTANCE_STATUS and status == Instance.Status.DISCARDED:
        forced["discard_reason"] = Instance.DiscardReason.CAPTION
    type(row).objects.filter(pk=row.pk).update(**forced)
    row.refresh_from_db()
    return row


def _fields_for(machine: StateMachine, event: str) -> dict:
    """What else the owner writes with the event, where the model's constraints ask for it."""
    if machine is ASSIGNMENT_STATUS and event == "submit":
        return {"also": {ASSIGNMENT_REVIEW: "submit"}, "payload": {}, "submitted_at": timezone.now()}
    if machine is INSTANCE_STATUS:
        return {"discard_reason": Instance.DiscardReason.CAPTION if event == "discarded" else ""}
    return {}


CASES = [
    pytest.param(machine, event, status, id=f"{NAMES[machine]}-{event}-from-{status or 'none'}")
    for machine in MACHINES for event in machine.transitions for status in machine.statuses
    # A review status other than none needs a submitted assignment, whose own "submit" needs none.
    if not (machine is ASSIGNMENT_STATUS and event == "submit" and status == Assignment.Status.SUBMITTED)
]


@pytest.mark.django_db
@pytest.mark.parametrize("machine, event, status", CASES)
def test_every_event_from_every_status_is_allowed_or_refused_as_declared(machine, event, status):
    row = _row(machine, status)
    model = type(row)
    before = model.objects.filter(pk=row.pk).values().get()
    transition = machine.transitions[event]
    if status in transition.sources:
        transitions.move(row, machine, event, **_fields_for(machine, event))
        stored = model.objects.filter(pk=row.pk).values_list(machine.field, flat=True).get()
        assert stored == (status if transition.target is None else transition.target)
        assert getattr(row, machine.field) == stored
    else:
        with pytest.raises(machine.error) as refused:
            transitions.move(row, machine, event, **_fields_for(machine, event))
        assert refused.value.status_code == 409 and refused.value.current == status
        assert model.objects.filter(pk=row.pk).values().get() == before  # the refusal changed nothing


@pytest.mark.django_db
def test_move_all_moves_only_the_rows_that_may():
    rows = [_row(BONUS_PAYMENT_STATUS, status) for status in BonusPayment.Status.values]
    moved = transitions.move_all(BonusPayment.objects.filter(pk__in=[row.pk for row in rows]),
                                 BONUS_PAYMENT_STATUS, "settle", paid_at=timezone.now())
    assert moved == 1
    stored = dict(BonusPayment.objects.values_list("token", "status"))
    assert stored == {"t-requested": "requested", "t-sending": "paid", "t-paid": "paid", "t-failed": "failed"}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_of_two_concurrent_writers_of_the_same_transition_only_one_wins():
    if connection.vendor != "postgresql":
        pytest.fail(f"this concurrency test needs PostgreSQL, not {connection.vendor} (DATABASE_URL=postgres://...)")
    run = _row(STEP_RUN_STATUS, StepRun.Status.QUEUED)
    barrier, outcomes = threading.Barrier(8), []

    def begin():
        from django.db import connections
        try:
            copy = StepRun.objects.get(pk=run.pk)  # each read it queued
            barrier.wait()
            transitions.move(copy, STEP_RUN_STATUS, "begin", attempts=1)
            outcomes.append("won")
        except TransitionRefused:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=begin) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["won"]
    assert StepRun.objects.values_list("status", "attempts").get(pk=run.pk) == ("running", 1)


# --- a single writer per field -----------------------------------------------------------------

# Benchmarks, like tests, bulk-insert finished work as fixtures (bench/results.py: 60,000 ranked assignments).
SKIPPED_DIRS = {"tests", "bench", "migrations", ".venv", "node_modules", "media", "staticfiles", "fakes"}
# The fake providers' servers keep their own records (an MTurk assignment's "Submitted"), not ours.
SKIPPED_FILES = {"fake_server.py"}
# Calls that write the keyword arguments they are given (and a model's constructor).
WRITING_CALLS = {"create", "update", "get_or_create", "update_or_create", "bulk_update"}


_ENUMS = {machine: {"status": "Status", "review_status": "ReviewStatus", "confirmation": "Confirmation"}[machine.field]
          for machine in MACHINES}


def _aliases(tree: ast.AST, spelled: str) -> set[str]:
    """Module-level names bound to ``spelled`` (``S = Instance.Status``)."""
    return {target.id for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
            and ast.unparse(node.value) == spelled for target in node.targets if isinstance(target, ast.Name)}


@functools.lru_cache(maxsize=None)
def _parse(source: str) -> ast.Module:
    return ast.parse(source)  # once per file for all the machines


def writes_of(machine: StateMachine, source: str, path: str) -> list[str]:
    """Places in ``source`` that write the machine's field: a transition through the helper
    (``move``/``move_all`` given the machine), an attribute assigned a value of the field's choices (or
    on a variable named after the model), or the field passed to a writing call or the model's
    constructor. ``file:line: code`` each."""
    model, _doc = MACHINES[machine]
    machine_name = _name_of(machine)
    field, spelled = machine.field, f"{model.__name__}.{_ENUMS[machine]}"
    tree = _parse(source)
    names = {spelled, *_aliases(tree, spelled)}
    hint = {"CollectionRound": "round", "BonusPayment": "payment", "StepRun": "step_run"}.get(
        model.__name__, model.__name__.lower())

    def mentions_enum(node: ast.AST) -> bool:
        text = ast.unparse(node)
        return any(text == name or text.startswith(f"{name}.") or f"{name}." in text for name in names)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts))
                for element, value in pairs:
                    if isinstance(element, ast.Attribute) and element.attr == field and value is not None and (
                            mentions_enum(value) or hint in ast.unparse(element.value).lower()):
                        found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:120]}")
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("move", "move_all") and any(
                    getattr(argument, "id", getattr(argument, "attr", None)) == machine_name for argument in node.args):
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:120]}")
            keywords = list(node.keywords)
            for keyword in node.keywords:  # get_or_create(defaults={"status": ...})
                if keyword.arg == "defaults" and isinstance(keyword.value, ast.Dict):
                    keywords += [ast.keyword(arg=key.value, value=value) for key, value in
                                 zip(keyword.value.keys, keyword.value.values) if isinstance(key, ast.Constant)]
            for keyword in keywords:
                if keyword.arg != field:
                    continue
                if name == model.__name__ or (name in WRITING_CALLS and (
                        mentions_enum(keyword.value) or model.__name__ in ast.unparse(node.func))):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:120]}")
    return sorted(set(found), key=lambda line: int(line.split(":")[1]))


def _production_modules():
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if not SKIPPED_DIRS & set(relative.parts) and relative.name not in SKIPPED_FILES:
            yield ".".join(relative.with_suffix("").parts).removesuffix(".__init__"), relative, path


@pytest.mark.parametrize("machine", list(MACHINES), ids=list(NAMES.values()))
def test_no_module_but_the_machines_writers_writes_its_field(machine):
    offenders, seen_in_writers = [], []
    for module, relative, path in _production_modules():
        writes = writes_of(machine, path.read_text(encoding="utf-8"), str(relative))
        (seen_in_writers if module in machine.writers else offenders).extend(writes)
    assert offenders == [], (f"{NAMES[machine]} written outside {', '.join(machine.writers)}:\n"
                             + "\n".join(offenders))
    assert seen_in_writers, f"the scan finds none of {', '.join(machine.writers)}'s writes of {NAMES[machine]}"


def test_the_scan_finds_every_shape_of_write():
    sample = (
        "S = BonusPayment.Status\n"
        "payment.status = BonusPayment.Status.PAID\n"  # 2
        "BonusPayment.objects.filter(pk=1).update(status='paid')\n"  # 3
        "rows.update(status=S.FAILED)\n"  # 4
        "x.status, x.sent_at = S.SENDING, now\n"  # 5
        "BonusPayment(token='t', status=s)\n"  # 6
        "BonusPayment.objects.get_or_create(token='t', defaults={'status': s})\n"  # 7
        "payment.status = chosen\n"  # 8: named after the model
        "BonusPayment.objects.filter(status=S.PAID)\n"  # a read
        "publication.status = Publication.Status.EXPIRED\n"  # another model's field
        "payment.error = S.FAILED\n"  # another field
        "move(payment, BONUS_PAYMENT_STATUS, 'send')\n"  # 12: through the helper
        "transitions.move_all(rows, BONUS_PAYMENT_STATUS, 'settle')\n"  # 13
        "move(publication, PUBLICATION_STATUS, 'expire')\n"  # another machine
    )
    lines = [int(line.split(":")[1]) for line in writes_of(BONUS_PAYMENT_STATUS, sample, "sample.py")]
    assert lines == [2, 3, 4, 5, 6, 7, 8, 12, 13]


# --- the docs ----------------------------------------------------------------------------------


def documented_table(text: str, name: str) -> list[tuple[str, list[str], str | None]]:
    """The first table after the line naming ``name`` (in backticks): (event, sources, target) per row,
    a target of "—" meaning the status stays."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if f"`{name}`" in line)
    rows, in_table = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            in_table = True
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if cells[0].startswith("`"):
                target = cells[2].strip("`")
                rows.append((cells[0].strip("`"), sorted(source.strip().strip("`") for source in cells[1].split(",")),
                             None if target == "—" else target))
        elif in_table:
            break
    return rows


@pytest.mark.parametrize("machine", list(MACHINES), ids=list(NAMES.values()))
def test_the_docs_draw_each_table_as_declared(machine):
    _model, doc = MACHINES[machine]
    name = _name_of(machine)
    text = (ROOT / doc).read_text(encoding="utf-8")
    none = {"": "none"}  # an empty status is written "none" in the docs
    declared = [(event, sorted(none.get(s, s) for s in sources), target) for event, sources, target in machine.table()]
    assert documented_table(text, name) == declared, f"{doc} draws {name} otherwise"


def _declared_names() -> dict[str, StateMachine]:
    import annotation.models
    import datasets_app.models
    import llm.models
    import providers.models
    import stepruns.models

    return {name: value for module in (annotation.models, datasets_app.models, llm.models, providers.models,
                                       stepruns.models)
            for name, value in vars(module).items() if isinstance(value, StateMachine)}


def _name_of(machine: StateMachine) -> str:
    return next(name for name, value in _declared_names().items() if value is machine)


def test_every_declared_machine_is_tested_here():
    assert set(_declared_names().values()) == set(MACHINES)


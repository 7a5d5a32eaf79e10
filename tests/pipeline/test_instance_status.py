"""The one owner of an instance's pipeline status: allowed and refused transitions, and no other writer."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.conf import settings

from datasets_app import instance_status
from datasets_app.instance_status import StatusConflict
from datasets_app.models import INSTANCE_STATUS
from datasets_app.models import Instance

from ..annotation.factories import make_instance

# Database behaviour (status transitions by conditional UPDATE): also run on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_sensitive]

S = Instance.Status
ALL = list(S.values)


def instance_in(status: str, reason: str = "") -> Instance:
    instance = make_instance(captions=False)
    Instance.objects.filter(pk=instance.pk).update(status=status, discard_reason=reason)
    instance.refresh_from_db()
    return instance


def reason_for(event: str) -> str:
    return Instance.DiscardReason.CAPTION if event == "discarded" else ""


@pytest.mark.parametrize("event", sorted(INSTANCE_STATUS.transitions))
@pytest.mark.parametrize("status", ALL)
def test_every_event_from_every_status_is_allowed_or_refused_as_drawn(event, status):
    transition = INSTANCE_STATUS.transitions[event]
    instance = instance_in(status, Instance.DiscardReason.RESPONSE if status == S.DISCARDED else "")
    if status in transition.sources:
        instance_status.move(instance, event, reason=reason_for(event))
        stored = Instance.objects.get(pk=instance.pk)
        assert stored.status == transition.target
        assert stored.discard_reason == reason_for(event)
    else:
        with pytest.raises(StatusConflict) as refused:
            instance_status.move(instance, event, reason=reason_for(event))
        assert refused.value.status_code == 409 and status in refused.value.message
        assert Instance.objects.get(pk=instance.pk).status == status


def test_the_verification_path_and_the_way_back():
    instance = instance_in(S.AWAITING_CAPTION)
    instance_status.captions_chosen(instance)
    instance_status.candidate_written(instance)
    instance_status.discarded(instance, reason=Instance.DiscardReason.HARMFUL)
    assert (instance.status, instance.discard_reason) == (S.DISCARDED, "harmful")
    instance_status.recaption(instance)
    assert Instance.objects.get(pk=instance.pk).discard_reason == ""
    with pytest.raises(StatusConflict):
        instance_status.verified(instance)  # awaiting_caption cannot jump to verified


def test_a_discard_needs_a_known_reason_and_nothing_else_takes_one():
    instance = instance_in(S.AWAITING_VERIFICATION)
    with pytest.raises(StatusConflict):
        instance_status.move(instance, "discarded")
    with pytest.raises(StatusConflict):
        instance_status.move(instance, "discarded", reason="bored")
    with pytest.raises(StatusConflict):
        instance_status.move(instance, "verified", reason="caption")
    with pytest.raises(StatusConflict, match="unknown instance status event"):
        instance_status.move(instance, "teleported")
    assert Instance.objects.get(pk=instance.pk).status == S.AWAITING_VERIFICATION


def test_the_owner_reads_the_stored_status_not_a_stale_copy():
    instance = instance_in(S.AWAITING_REFERENCE)
    stale = Instance.objects.get(pk=instance.pk)
    instance_status.candidate_written(instance)
    with pytest.raises(StatusConflict):
        instance_status.candidate_written(stale)


def test_creation_with_an_initial_status():
    family = make_instance().family
    made = instance_status.create_instance(family=family, instruction="New?", content_key="k" * 64,
                                           status=S.DISCARDED, discard_reason="response")
    assert (made.status, made.discard_reason) == (S.DISCARDED, "response")
    with pytest.raises(StatusConflict):
        instance_status.create_instance(family=family, instruction="x", content_key="y" * 64, status="lost")
    with pytest.raises(StatusConflict):
        instance_status.create_instance(family=family, instruction="x", content_key="z" * 64,
                                        status=S.VERIFIED, discard_reason="caption")


# --- a single writer ---------------------------------------------------------------------------

OWNER = Path("datasets_app/instance_status.py")
SKIPPED_DIRS = {"tests", "migrations", ".venv", "node_modules", "media", "staticfiles"}
# Calls that write the keyword arguments they are given.
WRITING_CALLS = {"create", "update", "get_or_create", "update_or_create", "bulk_create", "Instance"}


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(child, (ast.Name, ast.Attribute)) and (getattr(child, "id", None) == name
               or getattr(child, "attr", None) == name) for child in ast.walk(node))


def _writes(path: Path) -> list[str]:
    """Places in ``path`` that assign an instance's status or discard reason, or pass one to a write."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in {"status", "discard_reason"}:
                    owner = ast.unparse(target.value).lower()
                    if "instance" in owner or _mentions(node.value, "DiscardReason") or (
                        isinstance(node.value, ast.Attribute) and "Instance.Status" in ast.unparse(node.value)
                    ):
                        found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name not in WRITING_CALLS:
                continue
            for keyword in node.keywords:
                if keyword.arg in {"status", "discard_reason"} and (
                    "Instance.Status" in ast.unparse(keyword.value) or "instance" in ast.unparse(node.func).lower()
                    or name == "Instance" or keyword.arg == "discard_reason"
                ):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:120]}")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def test_no_code_but_the_owner_writes_an_instance_status():
    root = Path(settings.BASE_DIR)
    offenders = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if SKIPPED_DIRS & set(relative.parts) or relative == OWNER:
            continue
        offenders.extend(_writes(path))
    assert offenders == [], "instance status written outside datasets_app/instance_status.py:\n" + "\n".join(offenders)


def test_the_scan_finds_a_write_when_there_is_one(tmp_path):
    # The scanner itself must not be blind: each shape of write it claims to find is found.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "instance.status = Instance.Status.VERIFIED\n"
        "Instance.objects.filter(pk=1).update(status=Instance.Status.DISCARDED)\n"
        "Instance.objects.create(family=f, status=Instance.Status.VERIFIED)\n"
        "row.discard_reason = Instance.DiscardReason.CAPTION\n"
        "Instance(family=f, status=s)\n"
        "Instance.objects.filter(status=Instance.Status.VERIFIED)\n"  # a read, not a write
        "publication.status = Publication.Status.PUBLISHED\n"  # another model's status
    )
    assert [line.split(":")[1] for line in _writes(sample)] == ["1", "2", "3", "4", "5"]
    assert _writes(Path(settings.BASE_DIR) / OWNER)  # and the owner itself is seen writing


def test_the_documented_table_is_the_code():
    text = (Path(settings.BASE_DIR) / "docs" / "pipeline.md").read_text(encoding="utf-8")
    documented = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].strip("`") in INSTANCE_STATUS.transitions:
            documented[cells[0].strip("`")] = ({s.strip() for s in cells[1].split(",")}, cells[2])
    assert documented == {
        event: ({str(source) for source in t.sources}, str(t.target)) for event, t in INSTANCE_STATUS.transitions.items()
    }

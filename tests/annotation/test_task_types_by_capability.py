"""Outside their own package, task types are asked for capabilities, never known by name (#30).

Production code reads what a type declares (``yields``, its item sources' ``stage``, ``follow_up_type``
...) through ``annotation.task_types``; only the types themselves (``annotation/task_types/``) spell
their keys. The scan parses every production module and template and names each place that
compares, matches or looks up a registered task-type key.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from annotation.task_types import REGISTRY

from ..conftest import REPO_ROOT

# Where keys may be spelled: the plug-ins themselves. Tests, migrations and tools outside the
# request path (bench, harness, fakes) create rounds of a named type, which is not switching on one.
ALLOWED = (Path("annotation/task_types"),)
SKIPPED_DIRS = {"tests", "migrations", ".venv", "node_modules", "media", "staticfiles", ".git", "bench",
                "harness", "fakes", "locale"}
# A template tag that compares a key: {% if round.task_type == "pairwise" %}, {% if "x" in ... %}.
TEMPLATE_TAG = re.compile(r"{%\s*(?:if|elif)\b(.*?)%}", re.S)


def task_type_keys() -> set[str]:
    return set(REGISTRY.names())


def task_type_class_names() -> set[str]:
    return {type(task_type).__name__ for _, task_type in REGISTRY.items()}


def _production_files(root: Path, suffix: str) -> list[Path]:
    found = []
    for path in sorted(root.rglob(f"*{suffix}")):
        relative = path.relative_to(root)
        if SKIPPED_DIRS & set(relative.parts[:-1]):
            continue
        if any(relative.is_relative_to(allowed) for allowed in ALLOWED):
            continue
        found.append(path)
    return found


class KeyUses(ast.NodeVisitor):
    """Comparisons, ``in`` tests, ``match`` cases, dict keys, lookups and fetches naming a key."""

    def __init__(self, *, keys: set[str], classes: set[str]):
        self.keys = keys
        self.classes = classes
        self.constants: set[str] = set()  # module names bound to a key (PAIRWISE = "pairwise")
        self.found: list[tuple[int, str]] = []

    def scan(self, tree: ast.Module) -> list[tuple[int, str]]:
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and self._is_key(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.constants.update(target.id for target in targets if isinstance(target, ast.Name))
        self.visit(tree)
        return self.found

    def _is_key(self, node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in self.keys
        if isinstance(node, ast.Name):
            return node.id in self.constants
        if isinstance(node, ast.Attribute):  # PairwiseTask.key
            return node.attr == "key" and isinstance(node.value, ast.Name) and node.value.id in self.classes
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self._is_key(element) for element in node.elts)
        return False

    def _flag(self, node: ast.AST) -> None:
        self.found.append((node.lineno, ast.unparse(node)[:120]))

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(self._is_key(side) for side in (node.left, *node.comparators)):
            self._flag(node)
        self.generic_visit(node)

    def visit_MatchValue(self, node: ast.MatchValue) -> None:
        if self._is_key(node.value):
            self._flag(node)
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is not None and self._is_key(key) for key in node.keys):
            self._flag(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # A key handed to a call: a lookup (``filter(round__task_type="x")``, ``get_task_type("x")``), a
        # helper that filters by it (``self._rounds("x")``), a test of a name (``key.startswith("x")``).
        if any(self._is_key(argument) for argument in node.args) or any(
                keyword.arg and "task_type" in keyword.arg and self._is_key(keyword.value)
                for keyword in node.keywords):
            self._flag(node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # The round builder's kind, "<task type>:<item source>", spelled out.
        if isinstance(node.value, str) and node.value.partition(":")[0] in self.keys and ":" in node.value:
            self._flag(node)


def uses_of_keys_in_python(root: Path, *, keys: set[str], classes: set[str]) -> list[str]:
    found = []
    for path in _production_files(root, ".py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, code in KeyUses(keys=keys, classes=classes).scan(tree):
            found.append(f"{path.relative_to(root)}:{line}: {code}")
    return found


def uses_of_keys_in_templates(root: Path, *, keys: set[str]) -> list[str]:
    quoted = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, sorted(keys))))
    found = []
    for path in _production_files(root, ".html"):
        text = path.read_text(encoding="utf-8")
        for tag in TEMPLATE_TAG.finditer(text):
            if quoted.search(tag.group(1)):
                line = text.count("\n", 0, tag.start()) + 1
                found.append(f"{path.relative_to(root)}:{line}: {tag.group(0)[:120]}")
    return found


def test_no_production_code_outside_the_task_types_knows_a_type_by_its_key():
    keys, classes = task_type_keys(), task_type_class_names()
    found = (uses_of_keys_in_python(REPO_ROOT, keys=keys, classes=classes)
             + uses_of_keys_in_templates(REPO_ROOT, keys=keys))
    assert not found, "task types known by name outside annotation/task_types/ (ask for a capability):\n" + \
        "\n".join(found)


def _scan(source: str) -> list[tuple[int, str]]:
    keys, classes = task_type_keys(), task_type_class_names()
    return KeyUses(keys=keys, classes=classes).scan(ast.parse(source))


def test_the_scan_sees_each_way_of_switching_on_a_key():
    """The scan is only as good as what it recognises: each form below names a registered key."""
    forms = [
        'if round.task_type == "pairwise": pass',
        'ok = round.task_type != "ranking"',
        'ok = kind in ("caption", "verification")',
        'PAIRWISE = "pairwise"\nok = round.task_type == PAIRWISE',
        'ok = handler.key == PairwiseTask.key',
        'match round.task_type:\n    case "instruction_generation": pass',
        'ACTIONS = {"caption": "open a caption round"}',
        'rounds = CollectionRound.objects.filter(task_type="pairwise")',
        'items = WorkItem.objects.exclude(round__task_type__in=["ranking"])',
        'handler = get_task_type("verification")',
        'frames = [ranking_judgments(r) for r in self._rounds("ranking")]',
        'ok = key.startswith("ranking")',
        'ACTIONS = {S.AWAITING_CAPTION: ("open a caption round", "caption:awaiting_caption")}',
    ]
    for source in forms:
        assert _scan(source), source
    # A capability, a key read from data and an unrelated word are not uses of a key.
    for source in ['ok = round.task_type_handler.yields == "battles"', 'ok = round.task_type == other.task_type',
                   'ok = reason == "caption_problem"', 'services.create_round(task_type=key)',
                   'url = f"{handler.key}:{source.key}"']:
        assert not _scan(source), source

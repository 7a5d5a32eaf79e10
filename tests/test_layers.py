"""The import contract (``.importlinter``, docs/architecture.md): kept by the code as it stands, and
broken by a module that imports up a layer or imports a fake.

The broken cases copy the packages the contract names into a temporary folder, add one module
there and run ``lint-imports`` on the copy, so the tree under test is never touched.
"""
from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", str(folder / ".importlinter")],
                          cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)},
                          capture_output=True, text=True, timeout=120)


def root_packages() -> list[str]:
    config = configparser.ConfigParser()
    config.read(CONFIG)
    return config["importlinter"]["root_packages"].split()


def test_the_code_keeps_the_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The packages the contract names, copied; the copy keeps the contract, as the tree does."""
    folder = tmp_path_factory.mktemp("layers")
    for package in root_packages():
        shutil.copytree(ROOT / package, folder / package,
                        ignore=shutil.ignore_patterns("__pycache__", "static", "templates", "locale"))
    shutil.copy(CONFIG, folder / ".importlinter")
    result = lint_imports(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder


@pytest.mark.parametrize(("module", "imports", "contract"), [
    # the kernel reaching up to the site
    ("kernel/upward.py", "from crowdbench import urls", "Each layer imports only from the layers below it"),
    # the data layer reaching up to the work layer
    ("datasets_app/upward.py", "from annotation.models import Assignment",
     "Each layer imports only from the layers below it"),
    # a production module importing a fake, or a test tool
    ("annotation/uses_a_fake.py", "from fakes import openai_server", "No production module imports a fake"),
    ("providers/uses_pytest.py", "import pytest", "No production module imports a fake"),
])
def test_an_import_against_the_layers_breaks_the_contract(copy, module, imports, contract):
    added = copy / module
    added.write_text(f'"""A module that breaks the layers."""\n{imports}\n')
    try:
        result = lint_imports(copy)
    finally:
        added.unlink()

    assert result.returncode == 1, result.stdout + result.stderr
    assert contract in result.stdout and "BROKEN" in result.stdout, result.stdout
    assert module.removesuffix(".py").replace("/", ".") in result.stdout, result.stdout

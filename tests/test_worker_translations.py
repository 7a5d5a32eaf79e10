"""Every string a worker can see has a Japanese translation that workers actually get (#27).

The msgids are extracted from the worker-facing sources below the way ``makemessages`` does it
(templates through Django's ``templatize``, then ``xgettext`` with Django's keywords), merged with
the Japanese catalog by ``msgmerge``; an entry left empty or ``fuzzy`` (not compiled, so shown in
English) fails, and so does a translation the compiled catalog does not serve.
"""
from __future__ import annotations

import gettext
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation
from django.utils.translation import template, trans_real

ROOT = Path(settings.BASE_DIR)
PO = ROOT / "locale" / "ja" / "LC_MESSAGES" / "django.po"

# What a worker can see: their pages' templates (task pages, consent, history, settings, login and
# logout, the shared chrome) and the modules whose labels, instructions, refusals and errors reach
# them (worker views and API, services, forms, task-type plug-ins, the crowd providers' pages).
WORKER_FACING = [
    "templates/base.html",
    "templates/home.html",
    "templates/message.html",
    "templates/annotation",
    "templates/providers",
    "templates/registration",
    "annotation/api.py",
    "annotation/auth.py",
    "annotation/consent.py",
    "annotation/eligibility.py",
    "annotation/errors.py",
    "annotation/forms.py",
    "annotation/guardrails.py",
    "annotation/image_reports.py",
    "annotation/models.py",
    "annotation/permissions.py",
    "annotation/rule_labels.py",
    "annotation/selectors.py",
    "annotation/services",  # a module or a package
    "annotation/task_types",
    "annotation/views.py",
    "providers",  # MTurk's and Prolific's pages included
    "djangokit/text_input.py",
    # Why an image a worker gave (a URL, an upload) was refused.
    "datasets_app/image_urls.py",
    "datasets_app/services.py",
]
SKIP_DIRS = {"migrations", "management", "__pycache__"}

# Django's makemessages keywords for the "django" domain.
XGETTEXT = [
    "xgettext", "--language=Python", "--from-code=UTF-8", "--no-wrap", "--no-location",
    "--keyword=gettext_noop", "--keyword=gettext_lazy", "--keyword=ngettext_lazy:1,2",
    "--keyword=pgettext:1c,2", "--keyword=npgettext:1c,2,3", "--keyword=pgettext_lazy:1c,2",
    "--keyword=npgettext_lazy:1c,2,3",
]


def _sources() -> list[Path]:
    found = []
    for entry in WORKER_FACING:
        for path in [ROOT / entry, ROOT / f"{entry}.py"]:
            if path.is_file():
                found.append(path)
            elif path.is_dir():
                found += [p for p in sorted(path.rglob("*"))
                          if p.suffix in {".py", ".html", ".txt"} and not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return found


def _run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def worker_catalog(tmp_path_factory):
    """The Japanese .po restricted to the worker-facing msgids (merged.po) and its compiled form."""
    for tool in ("xgettext", "msgmerge", "msgattrib", "msgfmt"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} (GNU gettext) is needed to check the translations")
    tmp = tmp_path_factory.mktemp("i18n")
    inputs = []
    for number, path in enumerate(_sources()):
        if path.suffix == ".py":
            inputs.append(str(path))
        else:  # what makemessages does with a template: Python-like text for xgettext
            text = template.templatize(path.read_text(encoding="utf-8"), origin=str(path))
            target = tmp / f"{number}-{path.stem}.py"
            target.write_text(text, encoding="utf-8")
            inputs.append(str(target))
    pot = tmp / "worker.pot"
    _run(*XGETTEXT, f"--output={pot}", *inputs)
    merged = tmp / "merged.po"
    _run("msgmerge", "--quiet", "--no-fuzzy-matching", "--no-wrap", f"--output-file={merged}", str(PO), str(pot))
    mo = tmp / "merged.mo"
    _run("msgfmt", "--check-format", f"--output-file={mo}", str(merged))
    with mo.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)._catalog
    return merged, {key: value for key, value in compiled.items() if key != ""}


def test_the_worker_facing_sources_are_all_read(worker_catalog):
    _, compiled = worker_catalog
    sources = {str(path.relative_to(ROOT)) for path in _sources()}
    assert "templates/annotation/task_page.html" in sources
    assert any(s.startswith("annotation/task_types/") for s in sources)
    assert any(s.startswith("annotation/services") for s in sources)
    # Strings from a template, a plug-in, a service refusal and a provider page were extracted.
    for msgid in ("Time left", "Pairwise preference", "This round is not open for work.",
                  "This study link is incomplete; open it from Prolific.", "Log out"):
        assert msgid in compiled


def _entries(po_text: str) -> list[str]:
    """The entries of a .po text, without its header."""
    return [block for block in po_text.split("\n\n") if "msgid" in block and '"Project-Id-Version' not in block]


def test_every_worker_facing_string_has_a_japanese_translation(worker_catalog):
    merged, _ = worker_catalog
    untranslated = _entries(_run("msgattrib", "--untranslated", "--no-obsolete", "--no-wrap", str(merged)))
    fuzzy = _entries(_run("msgattrib", "--only-fuzzy", "--no-obsolete", "--no-wrap", str(merged)))
    assert not untranslated, f"{len(untranslated)} worker-facing strings without Japanese:\n" + "\n\n".join(untranslated)
    assert not fuzzy, f"{len(fuzzy)} worker-facing strings with a fuzzy (not compiled) Japanese:\n" + "\n\n".join(fuzzy)


def test_workers_are_served_the_translations(worker_catalog):
    """The committed .mo is current: Django's Japanese catalog gives what the .po says."""
    _, compiled = worker_catalog
    with translation.override("ja"):
        catalog = trans_real.catalog()._catalog  # the merged catalogs Django serves
        stale = {key: (catalog.get(key), value) for key, value in compiled.items() if catalog.get(key) != value}
    assert not stale, f"compile the Japanese catalog (compilemessages -l ja); stale: {stale}"

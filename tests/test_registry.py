"""The one registry style: every plug-in kind (task types, providers, rankers, metrics) is found the
same way, lazy entries load on first use, and unknown names are service refusals."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from annotation.task_types import REGISTRY, TaskType
from evaluation.metrics.base import Metric
from evaluation.metrics.registry import METRICS
from evaluation.rankers.registry import RANKERS
from kernel.errors import ServiceError
from kernel.registry import Registry, UnknownName
from providers.base import CrowdProvider
from providers.registry import PROVIDERS, get_provider

from .conftest import REPO_ROOT


class Alpha:
    name = "alpha"


class Beta:
    name = "beta"


def test_register_as_a_call_or_as_a_decorator_keeps_the_order():
    plugins: Registry[type] = Registry("plug-in")
    assert plugins.register(Beta) is Beta

    @plugins.register
    class Gamma:
        name = "gamma"

    @plugins.register(name="delta")
    class Delta:
        pass

    plugins.register(Alpha)
    assert plugins.names() == ["beta", "gamma", "delta", "alpha"] == list(plugins)
    assert len(plugins) == 4 and "gamma" in plugins and "Gamma" not in plugins and ["gamma"] not in plugins
    assert plugins.get("delta") is Delta
    assert plugins.items() == [("beta", Beta), ("gamma", Gamma), ("delta", Delta), ("alpha", Alpha)]


def test_a_name_is_registered_once_and_must_match_the_class():
    plugins: Registry[type] = Registry("plug-in")
    plugins.register(Alpha)
    with pytest.raises(ValueError, match="'alpha' is already registered"):
        plugins.register(Alpha)
    with pytest.raises(ValueError, match="names itself 'beta'"):
        plugins.register(Beta, name="gamma")
    with pytest.raises(ValueError, match="needs name="):
        plugins.register("tests.test_registry.Beta")
    with pytest.raises(ValueError, match="non-empty string"):
        plugins.register(object)  # no name of its own and none given
    assert plugins.names() == ["alpha"]


def test_build_keeps_one_stored_entry_per_name():
    instances: Registry[Alpha] = Registry("plug-in", build=lambda cls: cls())
    instances.register(Alpha)
    first = instances.get("alpha")
    assert isinstance(first, Alpha) and instances.get("alpha") is first


@pytest.mark.parametrize("name", ["", None, "ALPHA", "alpha\x00", ["alpha"], {"a": 1}, 7, "x" * 100_000])
def test_unknown_or_malformed_names_are_a_service_refusal_naming_the_known_ones(name):
    plugins: Registry[type] = Registry("plug-in")
    plugins.register(Beta)
    plugins.register(Alpha)
    with pytest.raises(UnknownName) as refused:
        plugins.get(name)
    error = refused.value
    assert isinstance(error, ServiceError) and isinstance(error, LookupError)
    assert error.status_code == 400 and error.known == ["alpha", "beta"]
    assert error.message.startswith("unknown plug-in ") and error.message.endswith("; known: alpha, beta")
    assert len(error.message) < 120  # a huge name is not echoed back whole
    assert "\x00" not in error.message  # control characters are shown escaped


def test_lazy_entries_are_imported_on_first_use(tmp_path, monkeypatch):
    (tmp_path / "heavy_plugin.py").write_text(textwrap.dedent("""
        class Heavy:
            name = "heavy"

        class Misnamed:
            name = "something-else"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "heavy_plugin", raising=False)
    plugins: Registry[type] = Registry("plug-in")
    assert plugins.register("heavy_plugin.Heavy", name="heavy") == "heavy_plugin.Heavy"
    plugins.register("heavy_plugin.Misnamed", name="misnamed")
    plugins.register("heavy_plugin.Missing", name="missing")
    assert plugins.names() == ["heavy", "misnamed", "missing"] and "heavy" in plugins
    assert "heavy_plugin" not in sys.modules

    heavy = plugins.get("heavy")
    assert heavy.__name__ == "Heavy" and heavy.__module__ == "heavy_plugin" and plugins.get("heavy") is heavy
    with pytest.raises(ValueError, match="names itself 'something-else'"):
        plugins.get("misnamed")
    with pytest.raises(AttributeError):
        plugins.get("missing")


def test_registered_adds_for_a_block_only_even_when_it_fails():
    plugins: Registry[Alpha] = Registry("plug-in", build=lambda cls: cls())
    with plugins.registered(Alpha) as entry:
        assert isinstance(entry, Alpha) and plugins.get("alpha") is entry
    assert "alpha" not in plugins
    with pytest.raises(RuntimeError), plugins.registered(Beta, name="beta"):
        assert plugins.names() == ["beta"]
        raise RuntimeError("the block failed")
    assert plugins.names() == []


def test_the_four_plugin_kinds_share_the_registry():
    assert all(isinstance(registry, Registry) for registry in (REGISTRY, PROVIDERS, RANKERS, METRICS))
    assert all(isinstance(task_type, TaskType) and task_type.key == key for key, task_type in REGISTRY.items())
    assert all(issubclass(cls, CrowdProvider) and cls.name == name for name, cls in PROVIDERS.items())
    assert all(issubclass(cls, Metric) and cls.name == name for name, cls in METRICS.items())
    assert all(callable(cls.from_options) for _, cls in RANKERS.items())
    for registry, kind in ((REGISTRY, "task type"), (PROVIDERS, "crowd provider"), (RANKERS, "ranker"),
                           (METRICS, "metric")):
        with pytest.raises(UnknownName, match=f"^unknown {kind} 'nope'; known: "):
            registry.get("nope")


def test_listing_rankers_imports_none_of_them():
    """The local ranker's module brings torch and transformers with it: naming rankers (the
    command line's choices) must not load it."""
    script = textwrap.dedent("""
        import os, sys
        import django
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
        django.setup()
        from evaluation.rankers.registry import RANKERS
        names = RANKERS.names()
        loaded = sorted(m for m in sys.modules if m.startswith("evaluation.rankers.") and m not in (
            "evaluation.rankers.registry", "evaluation.rankers.base"))
        print(len(names), loaded)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={"DEBUG": "1", "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "[]"]


class ProviderByName(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def post(self, request):
        return Response({"label": str(get_provider(request.data.get("provider")).label)})


@pytest.mark.parametrize("provider", ["acme", "\x1b[31m", ["local"], None])
def test_an_unknown_name_reaching_an_api_view_is_a_400_with_its_message(provider):
    request = APIRequestFactory().post("/", {"provider": provider}, format="json")
    response = ProviderByName.as_view()(request)
    assert response.status_code == 400
    assert response.data["detail"].startswith("unknown crowd provider ")
    assert response.data["detail"].endswith("known: local, mturk, prolific")
    known = ProviderByName.as_view()(APIRequestFactory().post("/", {"provider": "local"}, format="json"))
    assert known.status_code == 200 and known.data["label"]

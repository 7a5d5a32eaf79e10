"""What the crowd layer above (``providers/``) tells the work layer, handed in at start-up.

The work layer validates a worker's provider and a round's eligible providers, and shows a worker
the bonuses paid for their work; both facts belong to the providers, which this layer never
imports. ``ProvidersConfig.ready`` connects them before any request or command runs.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from django.core.exceptions import ImproperlyConfigured


def _not_connected(*args, **kwargs):
    raise ImproperlyConfigured("the providers app is not installed: the work layer cannot ask it")


# () -> the names of the registered crowd providers
provider_names: Callable[[], Iterable[str]] = _not_connected
# (assignments) -> the queryset of the bonuses paid for them (rows with assignment_id, amount, currency)
paid_bonuses: Callable[[Iterable], object] = _not_connected


def connect(*, names: Callable[[], Iterable[str]], bonuses: Callable[[Iterable], object]) -> None:
    global provider_names, paid_bonuses
    provider_names, paid_bonuses = names, bonuses

"""The session's user and, for a crowd worker, their worker record and workers-group membership in
one query: every request of the worker API needs all three (``services.workers.local_worker_for``).

With ``USER_CACHE_SECONDS`` (a shared cache, Redis in production) a worker's three are kept in the
cache and checked against a version token of the user, both read in one round trip: a worker's
request then costs no query for them. Whatever changes them replaces the token when its transaction
commits (``forget_cached_user``): the services that block, qualify or change a worker, a password
change (``MinimumLengthValidator.password_changed``). Django still compares the session's hash with
the password it is given, so a session ended by a password change stays ended; the cache holds that
session hash, never the password hash. Researchers and staff
are never cached: their rights are read on every request.
"""
from __future__ import annotations

import copy
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.password_validation import MinimumLengthValidator as DjangoMinimumLengthValidator
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef

from djangokit.prepared import PreparedQuery

# Set on users this backend loads: whether they are in the workers group, read with the user row.
IN_WORKER_GROUP = "in_crowd_worker_group"

_VERSION_KEY = "auth:user-version:{}"
_ENTRY_KEY = "auth:user:{}"


class UserWithWorkerBackend(ModelBackend):
    """Django's model backend (same logins, same permissions); only the per-request user load differs."""

    def get_user(self, user_id):
        try:
            user_id = int(user_id)
        except (TypeError, ValueError):
            return None
        seconds = settings.USER_CACHE_SECONDS
        if seconds <= 0:
            user = _load(user_id)
        else:
            user = _cached_user(user_id, seconds)
        return user if user is not None and self.user_can_authenticate(user) else None


def _load(user_id: int):
    return _user_with_worker.first(settings.ANNOTATION_WORKER_GROUP, user_id=user_id)


def _cacheable(user) -> bool:
    """Workers only: a plain member of the workers group, neither staff nor superuser."""
    return getattr(user, IN_WORKER_GROUP, False) and not (user.is_staff or user.is_superuser)


def _cached_user(user_id: int, seconds: int):
    version_key, entry_key = _VERSION_KEY.format(user_id), _ENTRY_KEY.format(user_id)
    found = cache.get_many([version_key, entry_key])
    version, entry = found.get(version_key), found.get(entry_key)
    if version is not None and entry is not None and entry[0] == version:
        return _from_cache(entry[1], entry[2])
    if version is None:
        # The token is read before the row: a change committed after this read replaces it, and the
        # entry stored below under the old token is then never served.
        cache.add(version_key, secrets.token_hex(8), None)
        version = cache.get(version_key)
    user = _load(user_id)
    if version is not None and user is not None and _cacheable(user):
        cache.set(entry_key, (version, *_for_cache(user)), seconds)
    return user


def _for_cache(user):
    """The cache never holds a password hash: a copy with the password deferred (read from the
    database if a page checks or changes it; a save then writes only the other fields), and the
    session hash made from it, all that Django's session check needs."""
    entry = copy.copy(user)
    del entry.__dict__["password"]
    # The worker record loaded with the user points back at it: at the copy, not at the original.
    for name, related in list(entry._state.fields_cache.items()):
        if related is not None and related._state.fields_cache:
            related = copy.copy(related)
            related._state.fields_cache = {key: entry if value is user else value
                                           for key, value in related._state.fields_cache.items()}
            entry._state.fields_cache[name] = related
    return entry, user.get_session_auth_hash()


def _from_cache(user, session_hash: str):
    class_hash = type(user).get_session_auth_hash

    def get_session_auth_hash():
        # Once the password is read or set on this copy (a password change), Django's own hash.
        return class_hash(user) if "password" in user.__dict__ else session_hash

    user.get_session_auth_hash = get_session_auth_hash
    return user


def forget_cached_user(user_id: int | None) -> None:
    """The user's cached copy is not served again once the current transaction commits (at once
    outside one): their version token is replaced."""
    if user_id is None or settings.USER_CACHE_SECONDS <= 0:
        return
    transaction.on_commit(lambda: cache.set(_VERSION_KEY.format(user_id), secrets.token_hex(8), None))


class MinimumLengthValidator(DjangoMinimumLengthValidator):
    """Django's minimum length check; Django tells it when a user's password changed (every
    ``set_password`` then ``save``), and the cached copy of that user is then forgotten."""

    def password_changed(self, password, user=None):
        if user is not None:
            forget_cached_user(user.pk)


def _build_user_with_worker(group_name, user_id: int):
    model = get_user_model()
    in_group = model.groups.through.objects.filter(user_id=OuterRef("pk"), group__name=group_name)
    return (model._default_manager.select_related("crowd_worker")
            .annotate(**{IN_WORKER_GROUP: Exists(in_group)}).filter(pk=user_id).order_by()[:1])


# Every request of a logged-in user loads it: compiled once (the group's name is the shape).
_user_with_worker = PreparedQuery(_build_user_with_worker)

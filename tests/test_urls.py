"""``djangokit.urls.reverse_with_id``: the URL of one row as ``reverse`` makes it, reversed once per name."""
from __future__ import annotations

from django.urls import reverse, set_script_prefix

from djangokit.urls import reverse_with_id


def test_reverse_with_id_gives_what_reverse_gives():
    for name in ("annotation-api:submit", "annotation-api:submit-and-next", "annotation-api:start", "annotation:round"):
        for pk in (1, 42, 918273645, 10**12):
            assert reverse_with_id(name, pk) == reverse(name, args=[pk])
    # Behind a path prefix (SCRIPT_NAME) the prefix is part of the URL, as with reverse.
    set_script_prefix("/crowd/")
    try:
        assert reverse_with_id("annotation-api:submit", 7) == reverse("annotation-api:submit", args=[7]) == (
            "/crowd/api/work/assignments/7/submit/")
    finally:
        set_script_prefix("/")

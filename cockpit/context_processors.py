from django.utils.functional import SimpleLazyObject

from .access import is_researcher


def roles(request):
    """``is_researcher`` for the site header's link to the cockpit (queried only when shown)."""
    user = getattr(request, "user", None)
    return {"is_researcher": SimpleLazyObject(lambda: bool(user is not None and is_researcher(user)))}

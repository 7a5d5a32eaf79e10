from django.utils.functional import SimpleLazyObject

from .permissions import is_local_worker


def roles(request):
    """``is_worker`` for the site header's link to the worker's pages (queried only when shown)."""
    user = getattr(request, "user", None)
    return {"is_worker": SimpleLazyObject(lambda: bool(user is not None and is_local_worker(user)))}

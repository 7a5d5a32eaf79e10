from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.defaults import page_not_found


def home(request):
    """Landing page: where researchers and workers go next."""
    return render(request, "home.html")


def favicon(request):
    """The site's icon for browsers that ask for /favicon.ico (pages link the SVG themselves)."""
    return redirect(static("crowdbench/favicon.svg"), permanent=True)


def not_found(request, exception=None):
    """404 for an address no view matches: JSON under /api/ (as the API's other errors), else the page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)

from django.http import JsonResponse
from django.shortcuts import render
from django.views.defaults import page_not_found


def home(request):
    """Landing page: where researchers and workers go next."""
    return render(request, "home.html")


def not_found(request, exception=None):
    """404 for an address no view matches: JSON under /api/ (as the API's other errors), else the page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)

from django.shortcuts import redirect, render
from django.templatetags.static import static


def home(request):
    """Landing page: where researchers and workers go next."""
    return render(request, "home.html")


def favicon(request):
    """The site's icon for browsers that ask for /favicon.ico (pages link the SVG themselves)."""
    return redirect(static("crowdbench/favicon.svg"), permanent=True)

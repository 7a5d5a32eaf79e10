from django.shortcuts import render


def home(request):
    """Landing page: where researchers and workers go next."""
    return render(request, "home.html")

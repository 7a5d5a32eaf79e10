"""The project's URLs plus media files, which the test server does not serve otherwise (DEBUG is off)."""
from django.conf import settings
from django.urls import re_path
from django.views.static import serve

from crowdbench.urls import urlpatterns as project_urlpatterns


def serve_media(request, path):
    # MEDIA_ROOT is read per request: each test points it at its own tmp folder.
    return serve(request, path, document_root=settings.MEDIA_ROOT)


urlpatterns = [*project_urlpatterns, re_path(r"^media/(?P<path>.*)$", serve_media)]

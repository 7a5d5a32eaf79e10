"""The researcher REST API under /api/ (routes in ``api/urls.py``; see docs/api.md).

One module per pipeline stage; every view is thin: it scopes reads with ``projects.selectors``
(non-members get 404), lets collaborators read and owners write, and calls the services.
"""

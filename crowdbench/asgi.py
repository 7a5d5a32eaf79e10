import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
# Serving: the settings refuse to load with a weak SECRET_KEY when DEBUG is off.
os.environ["CROWDBENCH_SERVING"] = "1"
application = get_asgi_application()

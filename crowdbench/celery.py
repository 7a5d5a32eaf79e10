"""Celery application.

With ``CELERY_BROKER_URL`` unset, tasks run eagerly in-process (the embedded default), so the
same services work from management commands without a broker.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")

app = Celery("crowdbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

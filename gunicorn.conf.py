"""gunicorn configuration of crowdbench (``gunicorn -c gunicorn.conf.py crowdbench.wsgi``; gunicorn also
reads this file by itself when started in the repository). Every value comes from the environment.

Threads: a request of the worker API spends most of its time waiting for PostgreSQL, so a few threads
per process keep the cores busy; each thread holds its own persistent database connection
(``CONN_MAX_AGE``), so PostgreSQL must allow ``WEB_CONCURRENCY × GUNICORN_THREADS`` connections per host.
"""
import gc
import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Two processes per core with 2 threads each. Measured with bench/load.py on 2 cores (1,000-item
# round), submit-path requests/s: 4 × 2 88–91, 3 × 2 85, 2 × 8 (the earlier default) 79, 6 × 1 69.
# A request now spends little of its time waiting for PostgreSQL, so more threads mostly contend for
# the interpreter lock; one thread per process was slower still.
workers = int(os.environ.get("WEB_CONCURRENCY", str(2 * multiprocessing.cpu_count())))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
worker_class = "gthread"
# A request running longer than this is killed and its worker replaced (uploads and pages stay far below).
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
# Idle keep-alive connections from the load balancer.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# Recycle processes now and then (with jitter, so they do not all restart at once).
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "10000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", "1000"))
# The application's own log lines (plain or JSON, LOG_FORMAT) go to stderr; access lines are off
# unless asked for, since the application logs what matters and access lines would hold query strings.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


def post_worker_init(worker):
    """The application is loaded and its modules, settings, URL patterns and compiled statements live
    as long as the process: frozen, the collector's full passes skip them and walk only what requests
    made. Measured with bench/load.py (1,000-item round): a full collection paused a worker (both its
    threads) for 0.45–0.78 s without, 0.08–0.09 s with (about 270,000 objects frozen). Raising the
    first generation's threshold to 10,000 as well made its passes pause for 50–75 ms: left as it is."""
    gc.freeze()

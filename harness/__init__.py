"""Live-service harness shared by the load bench (``bench/load.py``) and the fault tests (``tests/faults/``).

``processes``: fresh PostgreSQL databases, a private PostgreSQL cluster and a private Redis server
that a test may stop and restart, gunicorn with the repository's ``gunicorn.conf.py``, a Celery worker.
``crowd``: a pairwise round with local workers, simulated workers looping "next task → submit"
over HTTP, and the integrity check of what they were acknowledged.
"""

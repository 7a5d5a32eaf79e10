"""The Prolific provider: its API client (``provider``), worker pages (``views``, ``urls``,
``templates/``, ``static/``), the local fake of its API (``fake_server``) and its dry-run
participants (``rehearsal``). Kept free of imports so ``python -m fakes.prolific``
runs without Django."""

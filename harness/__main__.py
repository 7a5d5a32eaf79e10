"""The crowd set-up and check against the database of ``DATABASE_URL``, for callers whose own process is
connected elsewhere (e.g. a test on a private PostgreSQL cluster). JSON out on stdout:

    python -m harness build-round --items 60 --overlap 2 --workers 8 [--migrate]   → {"round": 1, "usernames": [...]}
    python -m harness check-integrity --round 1 --overlap 2 --items 60 < acknowledged.json   → {...}
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m harness")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build-round")
    build.add_argument("--items", type=int, required=True)
    build.add_argument("--overlap", type=int, required=True)
    build.add_argument("--workers", type=int, required=True)
    build.add_argument("--migrate", action="store_true", help="migrate the database first (one start-up for both)")
    check = commands.add_parser("check-integrity")
    check.add_argument("--round", type=int, required=True)
    check.add_argument("--overlap", type=int, required=True)
    check.add_argument("--items", type=int, required=True)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    import django

    django.setup()
    from .crowd import build_round, check_integrity

    if args.command == "build-round":
        if args.migrate:
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
        round, usernames = build_round(items=args.items, overlap=args.overlap, workers=args.workers)
        json.dump({"round": round.pk, "usernames": usernames}, sys.stdout)
    else:
        acknowledged = json.load(sys.stdin)
        json.dump(check_integrity(round_id=args.round, acknowledged=acknowledged, overlap=args.overlap,
                                  items=args.items), sys.stdout)


if __name__ == "__main__":
    main()

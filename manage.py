#!/usr/bin/env python
"""crowdbench command-line entry point."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 (load the settings: their refusal is the message to show)
    except ImproperlyConfigured as error:
        sys.exit(f"ImproperlyConfigured: {error}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

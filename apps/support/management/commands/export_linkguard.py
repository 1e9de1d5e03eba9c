"""Write the link guard's linkify-it configuration for the widget (frontend/widget/src/linkguard.json).

Run after upgrading `publicsuffixlist` (its ICANN list is the TLD set), then `make widget`:
`python manage.py export_linkguard`."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.core import links


def rendered() -> str:
    return json.dumps(links.linkify_config(), ensure_ascii=False, indent=1, sort_keys=True) + "\n"


class Command(BaseCommand):
    help = "Write the link guard's linkify-it configuration for the widget build."

    def handle(self, *args, **options):
        path = Path(settings.BASE_DIR) / links.WIDGET_CONFIG_PATH
        path.write_text(rendered(), encoding="utf-8")
        self.stdout.write(f"wrote {path}")

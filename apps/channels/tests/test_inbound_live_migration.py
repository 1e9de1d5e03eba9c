"""The migration that makes inbound live for every connection whose registration did not fail: the
providers without a webhook mechanism, AliExpress's unverified subscribe and VK's hook row take hook
calls afterwards; a failed or registered connection keeps its state."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.channels.models import MessengerConnection

BEFORE = [("apps_channels", "0009_outbound_deliveries_gone")]


@pytest.mark.django_db(transaction=True)
def test_connections_whose_registration_did_not_fail_become_live(widget):
    rows = {
        "fb": ("not_supported", False),
        "ali": ("unconfirmed_provider_api", False),
        "vk": ("", False),
        "vb": ("failed", False),
        "tg": ("registered", True),
    }
    for provider, (status, live) in rows.items():
        MessengerConnection.objects.create(
            widget=widget, provider=provider, hook_id=f"hook-{provider}", webhook_status=status, inbound_live=live
        )
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor = MigrationExecutor(connection)
    executor.migrate([key for key in executor.loader.graph.leaf_nodes() if key[0] == "apps_channels"])
    live = dict(MessengerConnection.objects.values_list("provider", "inbound_live"))
    assert live == {"fb": True, "ali": True, "vk": True, "vb": False, "tg": True}

"""Routing and SLA rows in Django admin: read-only, another account's rows neither listed nor shown."""

from datetime import UTC, datetime

import pytest

from apps.chats.tests.factories import ChatFactory
from apps.routing.models import ChatRouting, RoutingSettings, SlaClock, SlaPolicy
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db
T = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def rows(widget, name: str):
    chat = ChatFactory(widget=widget)
    policy = SlaPolicy.objects.create(widget=widget, name=name, first_response_seconds=60)
    clock = SlaClock.objects.create(
        widget=widget, chat=chat, policy_id=policy.pk, kind="first_response", started_at=T, due_at=T
    )
    return {
        "routingsettings": RoutingSettings.objects.create(widget=widget),
        "chatrouting": ChatRouting.objects.create(chat=chat, widget=widget, queued_at=T),
        "slapolicy": policy,
        "slaclock": clock,
    }


@pytest.mark.parametrize("model", ["routingsettings", "chatrouting", "slapolicy", "slaclock"])
def test_own_rows_are_shown_read_only_and_foreign_ones_are_missing(widget, other_widget, model):
    mine, theirs = rows(widget, "Mine"), rows(other_widget, "Theirs")
    client = staff_client("routing", f"view_{model}", f"change_{model}", f"add_{model}", account_of=widget)
    listing = client.get(f"/admin/routing/{model}/")
    assert listing.status_code == 200
    ids = {row.pk for row in listing.context["cl"].result_list}
    assert ids == {mine[model].pk}
    page = client.get(f"/admin/routing/{model}/{mine[model].pk}/change/")
    assert page.status_code == 200 and not page.context["has_change_permission"]
    assert client.get(f"/admin/routing/{model}/add/").status_code == 403
    foreign = client.get(f"/admin/routing/{model}/{theirs[model].pk}/change/")
    assert foreign.status_code == 302 and foreign["Location"] == "/admin/"

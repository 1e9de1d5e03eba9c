"""The subscription admin: a subscription's url receives its widget's events, so a staff user
reaches only the widgets an API token could be issued for (apps.core.services.issuable_widgets)."""

import pytest

from apps.audit.models import AuditEntry
from apps.webhooks.models import Delivery, Subscription
from apps.webhooks.tests.test_api import log_of
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db

PERMS = ("add_subscription", "change_subscription", "view_subscription")
STAMP = ("2026-01-01", "00:00:00")


def staff(account_of):
    return staff_client("webhooks", *PERMS, account_of=account_of)


def form(widget, url: str) -> dict:
    return {"widget": widget.pk, "url": url, "events": '["message.created"]', "is_active": "on"}


def test_another_accounts_subscriptions_are_neither_listed_nor_changed(widget, other_widget):
    theirs = Subscription.objects.create(
        widget=other_widget, url="https://hooks.example.com/a", events=["chat.created"]
    )
    client = staff(account_of=widget)
    assert "hooks.example.com/a" not in client.get("/admin/webhooks/subscription/").content.decode()
    response = client.post(
        f"/admin/webhooks/subscription/{theirs.pk}/change/", form(other_widget, "https://attacker.example/x")
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.url == "https://hooks.example.com/a"


def test_a_subscription_on_another_accounts_widget_is_refused(widget, other_widget):
    client = staff(account_of=widget)
    response = client.post("/admin/webhooks/subscription/add/", form(other_widget, "https://attacker.example/x"))
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Subscription.objects.exists()


def test_the_own_accounts_subscriptions_are_listed(widget):
    Subscription.objects.create(widget=widget, url="https://hooks.example.com/mine", events=["chat.created"])
    client = staff(account_of=widget)
    assert "hooks.example.com/mine" in client.get("/admin/webhooks/subscription/").content.decode()


@pytest.mark.parametrize("url", ["http://hooks.example.com/x", "https://169.254.169.254/latest", "https://10.0.0.1/"])
def test_a_url_the_destination_rule_refuses_is_a_form_error(widget, url):
    mine = Subscription.objects.create(widget=widget, url="https://hooks.example.com/mine", events=["chat.created"])
    client = staff(account_of=widget)
    stamps = {f"{name}_{i}": part for name in ("created_at", "updated_at") for i, part in enumerate(STAMP)}
    response = client.post(f"/admin/webhooks/subscription/{mine.pk}/change/", {**form(widget, url), **stamps})
    page = response.content.decode()
    assert response.status_code == 200 and ("Refused destination" in page or "public address" in page)
    mine.refresh_from_db()
    assert mine.url == "https://hooks.example.com/mine"


def test_a_change_that_keeps_the_url_saves(widget):
    mine = Subscription.objects.create(widget=widget, url="https://hooks.example.com/mine", events=["chat.created"])
    client = staff(account_of=widget)
    stamps = {f"{name}_{i}": part for name in ("created_at", "updated_at") for i, part in enumerate(STAMP)}
    body = {**form(widget, "https://hooks.example.com/mine"), **stamps}
    body.pop("is_active")
    response = client.post(f"/admin/webhooks/subscription/{mine.pk}/change/", body)
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.is_active is False


def test_the_delete_page_counts_the_delivery_log_and_the_deletion_takes_it_in_batches(widget):
    sub = Subscription.objects.create(widget=widget, url="https://hooks.example.com/a", events=["chat.created"])
    log_of(widget, sub, 3)
    # the log goes along, so the deliveries' delete permission is needed too, as on Django's own page
    without = staff_client("webhooks", "delete_subscription", "view_subscription", account_of=widget)
    page = without.get(f"/admin/webhooks/subscription/{sub.pk}/delete/")
    assert page.status_code == 200 and page.context["perms_lacking"] == {"delivery"}
    client = staff_client("webhooks", "delete_subscription", "view_subscription", "delete_delivery", account_of=widget)
    page = client.get(f"/admin/webhooks/subscription/{sub.pk}/delete/")
    assert page.status_code == 200 and dict(page.context["model_count"])["deliveries"] == 3
    assert client.post(f"/admin/webhooks/subscription/{sub.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Subscription.objects.filter(pk=sub.pk).exists() and not Delivery.objects.exists()
    assert AuditEntry.objects.filter(action="webhook_subscription.deleted", target_id=str(sub.pk)).count() == 1


def test_another_accounts_delivery_log_is_not_shown(widget, other_widget):
    theirs = Subscription.objects.create(widget=other_widget, url="https://hooks.example.com/theirs", events=[])
    log_of(other_widget, theirs, 1)
    delivery = Delivery.objects.get()
    client = staff_client("webhooks", "view_delivery", account_of=widget)
    assert "hooks.example.com/theirs" not in client.get("/admin/webhooks/delivery/").content.decode()
    response = client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/")
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"


def test_deliveries_are_not_added_or_changed_in_admin(widget):
    mine = Subscription.objects.create(widget=widget, url="https://hooks.example.com/mine", events=[])
    log_of(widget, mine, 1)
    delivery = Delivery.objects.get()
    client = staff_client("webhooks", "view_delivery", "add_delivery", "change_delivery", account_of=widget)
    assert client.get("/admin/webhooks/delivery/add/").status_code == 403
    assert "hooks.example.com/mine" in client.get("/admin/webhooks/delivery/").content.decode()
    assert client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/").status_code == 200


def test_a_subscription_does_not_move_to_another_widget(widget):
    from tests.support.factories import WidgetFactory

    mine = Subscription.objects.create(widget=widget, url="https://hooks.example.com/a", events=["chat.created"])
    another_of_mine = WidgetFactory(account=widget.account)
    data = {**form(another_of_mine, "https://hooks.example.com/a"), "created_at_0": STAMP[0], "created_at_1": STAMP[1]}
    data.update({"updated_at_0": STAMP[0], "updated_at_1": STAMP[1]})
    staff(account_of=widget).post(f"/admin/webhooks/subscription/{mine.pk}/change/", data)
    mine.refresh_from_db()
    assert mine.widget_id == widget.pk

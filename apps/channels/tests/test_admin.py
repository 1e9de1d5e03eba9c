"""The custom channel admin: a channel's url receives its widget's operator messages, so a staff user
reaches only the widgets an API token could be issued for (apps.core.services.issuable_widgets), and
a url passes the webhook destination rule, as the API's registration does."""

import pytest

from apps.channels.models import CustomChannel
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db

PERMS = ("change_customchannel", "view_customchannel")


def staff(account_of):
    return staff_client("apps_channels", *PERMS, account_of=account_of)


def channel(widget, url="https://hooks.example.com/channel") -> CustomChannel:
    return CustomChannel.objects.create(widget=widget, name="App", url=url, secret_encrypted="")


def test_another_accounts_channels_are_neither_listed_nor_changed(widget, other_widget):
    theirs = channel(other_widget)
    client = staff(account_of=widget)
    assert "hooks.example.com/channel" not in client.get("/admin/apps_channels/customchannel/").content.decode()
    response = client.post(
        f"/admin/apps_channels/customchannel/{theirs.pk}/change/",
        {"name": "App", "url": "https://attacker.example/x", "is_active": "on"},
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert theirs.url == "https://hooks.example.com/channel"


def test_the_own_accounts_channels_are_listed(widget):
    channel(widget)
    client = staff(account_of=widget)
    assert "hooks.example.com/channel" in client.get("/admin/apps_channels/customchannel/").content.decode()


@pytest.mark.parametrize("url", ["http://hooks.example.com/x", "https://169.254.169.254/latest", "https://10.0.0.1/"])
def test_a_url_the_destination_rule_refuses_is_a_form_error(widget, url):
    mine = channel(widget)
    client = staff(account_of=widget)
    response = client.post(
        f"/admin/apps_channels/customchannel/{mine.pk}/change/", {"name": "App", "url": url, "is_active": "on"}
    )
    page = response.content.decode()
    assert response.status_code == 200 and ("Refused destination" in page or "public address" in page)
    mine.refresh_from_db()
    assert mine.url == "https://hooks.example.com/channel"


# --- ad cabinets: the API's plan gate and slots, the staff user's widgets ---------------------------

CABINET_PERMS = ("add_adcabinet", "change_adcabinet", "view_adcabinet")
CABINETS = "/admin/apps_channels/adcabinet/"


def cabinet_staff(account_of):
    return staff_client("apps_channels", *CABINET_PERMS, account_of=account_of)


def paid_plan(widget, slots=1):
    from apps.billing.models import AccountPlan, Plan

    plan = Plan.objects.create(slug=f"pro-{widget.pk}", name="Pro", is_paid=True, ad_cabinet_slots=slots)
    AccountPlan.objects.create(account=widget.account, plan=plan)


def cabinet(widget, status="disabled"):
    from apps.channels.models import AdCabinet

    return AdCabinet.objects.create(widget=widget, name="Avito", status=status)


def test_enabling_a_cabinet_without_a_paid_plan_is_a_form_error(widget):
    mine = cabinet(widget)
    response = cabinet_staff(widget).post(f"{CABINETS}{mine.pk}/change/", {"name": "Avito", "status": "enabled"})
    assert response.status_code == 200 and "paid plan" in response.content.decode()
    mine.refresh_from_db()
    assert mine.status == "disabled"


def test_enabling_a_cabinet_past_the_plans_slots_is_a_form_error(widget):
    paid_plan(widget, slots=1)
    cabinet(widget, status="enabled")
    second = cabinet(widget)
    response = cabinet_staff(widget).post(f"{CABINETS}{second.pk}/change/", {"name": "Avito", "status": "enabled"})
    assert response.status_code == 200 and "slots" in response.content.decode()
    second.refresh_from_db()
    assert second.status == "disabled"


def test_enabling_a_cabinet_within_the_plan_is_saved(widget):
    paid_plan(widget, slots=1)
    mine = cabinet(widget)
    response = cabinet_staff(widget).post(f"{CABINETS}{mine.pk}/change/", {"name": "Avito 2", "status": "enabled"})
    assert response.status_code == 302
    mine.refresh_from_db()
    assert (mine.name, mine.status) == ("Avito 2", "enabled")


def test_a_new_cabinet_starts_disabled_whatever_the_form_says(widget):
    from apps.channels.models import AdCabinet

    paid_plan(widget, slots=5)
    response = cabinet_staff(widget).post(f"{CABINETS}add/", {"widget": widget.pk, "name": "New", "status": "enabled"})
    assert response.status_code == 302
    assert AdCabinet.objects.get(name="New").status == "disabled"


def test_another_accounts_cabinets_are_neither_listed_nor_changed_nor_added_to(widget, other_widget):
    from apps.channels.models import AdCabinet

    paid_plan(other_widget, slots=5)
    theirs = cabinet(other_widget)
    client = cabinet_staff(widget)
    assert f"{CABINETS}{theirs.pk}/change/" not in client.get(CABINETS).content.decode()
    response = client.post(f"{CABINETS}{theirs.pk}/change/", {"name": "Mine now", "status": "enabled"})
    assert response.status_code == 302 and response["Location"] == "/admin/"  # "does not exist"
    theirs.refresh_from_db()
    assert (theirs.name, theirs.status) == ("Avito", "disabled")
    response = client.post(f"{CABINETS}add/", {"widget": other_widget.pk, "name": "Planted"})
    assert response.status_code == 200 and not AdCabinet.objects.filter(name="Planted").exists()


def test_billing_staff_suspend_a_cabinet_and_lifting_it_leaves_it_disabled(widget):
    paid_plan(widget, slots=1)
    mine = cabinet(widget, status="enabled")
    client = cabinet_staff(widget)
    response = client.post(f"{CABINETS}{mine.pk}/change/", {"name": "Avito", "status": "suspended_by_billing"})
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == "suspended_by_billing"
    response = client.post(f"{CABINETS}{mine.pk}/change/", {"name": "Avito", "status": "disabled"})
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == "disabled"


def test_the_widget_of_a_cabinet_does_not_change_in_admin(widget):
    from tests.support.factories import WidgetFactory

    mine = cabinet(widget)
    another_of_mine = WidgetFactory(account=widget.account)
    response = cabinet_staff(widget).post(
        f"{CABINETS}{mine.pk}/change/", {"widget": another_of_mine.pk, "name": "Avito", "status": "disabled"}
    )
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.widget_id == widget.pk


@pytest.mark.parametrize("bulk", [False, True])
def test_a_cabinet_is_deleted_in_admin_as_delete_does(widget, monkeypatch, bulk):
    from apps.channels.models import AdCabinet
    from apps.core import events

    emitted = []
    original = events.emit
    monkeypatch.setattr(events, "emit", lambda w, t, **kw: (emitted.append(t), original(w, t, **kw))[1])
    mine = cabinet(widget)
    client = staff_client("apps_channels", *CABINET_PERMS, "delete_adcabinet", account_of=widget)
    if bulk:
        response = client.post(CABINETS, {"action": "delete_selected", "_selected_action": [mine.pk], "post": "yes"})
    else:
        response = client.post(f"{CABINETS}{mine.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not AdCabinet.objects.exists()
    assert emitted == [events.WIDGET_CONFIG_CHANGED]

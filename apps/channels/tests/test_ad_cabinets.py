"""Ad-marketplace cabinets: created by the command, listed (no N+1), read, enabled within the
plan's slots, suspended_by_billing system-owned, deleted for good; departments may name them."""

from __future__ import annotations

import json
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from apps.billing.models import AccountPlan, Plan
from apps.channels.cabinets import create_ad_cabinet
from apps.channels.models import AdCabinet
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/messengers/av/cabinets"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": str(uuid.uuid4())}


@pytest.fixture
def plan(widget):
    plan = Plan.objects.create(slug="test-pro", name="Test Pro", is_paid=True, ad_cabinet_slots=1)
    AccountPlan.objects.create(account=widget.account, plan=plan)
    return plan


def patch(api, cabinet, status):
    return api(scopes=["messengers:write"]).patch(f"{URL}/{cabinet.pk}", {"status": status}, format="json", **idem())


def test_the_command_creates_a_disabled_cabinet(widget):
    out = StringIO()
    call_command("create_ad_cabinet", "--widget", str(widget.pk), "--name", "Avito", stdout=out)
    cabinet = AdCabinet.objects.get(pk=json.loads(out.getvalue())["cabinet_id"])
    assert (cabinet.widget_id, cabinet.status, cabinet.channel) == (widget.pk, "disabled", f"av__{cabinet.pk}")


def test_list_and_read(api, widget, django_assert_max_num_queries):
    cabinets = [create_ad_cabinet(widget=widget, name=f"c{i}") for i in range(5)]
    client = api(scopes=["messengers:read"])
    with django_assert_max_num_queries(8):
        body = client.get(URL).json()
    assert [row["id"] for row in body["data"]] == [c.pk for c in reversed(cabinets)]
    one = client.get(f"{URL}/{cabinets[0].pk}").json()
    assert one["status"] == "disabled" and one["channel"] == f"av__{cabinets[0].pk}"


def test_enable_within_the_slots(api, widget, plan):
    first, second = create_ad_cabinet(widget=widget, name="a"), create_ad_cabinet(widget=widget, name="b")
    assert patch(api, first, "enabled").json()["status"] == "enabled"
    assert_problem(patch(api, second, "enabled"), 409, "cabinet_slots_exhausted")
    assert patch(api, first, "disabled").status_code == 200
    assert patch(api, second, "enabled").status_code == 200


def test_enabling_needs_a_paid_plan(api, widget):
    cabinet = create_ad_cabinet(widget=widget, name="a")
    assert_problem(patch(api, cabinet, "enabled"), 409, "plan_required")
    assert patch(api, cabinet, "disabled").status_code == 200


def test_suspended_by_billing_is_system_owned(api, widget, plan):
    cabinet = create_ad_cabinet(widget=widget, name="a")
    assert "status" in assert_problem(patch(api, cabinet, "suspended_by_billing"), 422)["errors"]
    AdCabinet.objects.filter(pk=cabinet.pk).update(status="suspended_by_billing")
    assert_problem(patch(api, cabinet, "enabled"), 409, "cabinet_suspended")
    assert AdCabinet.objects.get(pk=cabinet.pk).status == "suspended_by_billing"


def test_delete_is_permanent_and_foreign_ids_are_404(api, widget, other_widget):
    mine, foreign = create_ad_cabinet(widget=widget, name="a"), create_ad_cabinet(widget=other_widget, name="f")
    client = api(scopes=["messengers:read", "messengers:write"])
    assert_problem(client.get(f"{URL}/{foreign.pk}"), 404)
    assert_problem(client.delete(f"{URL}/{foreign.pk}"), 404)
    assert_problem(patch(api, foreign, "disabled"), 404)
    assert client.delete(f"{URL}/{mine.pk}").status_code == 204
    assert_problem(client.get(f"{URL}/{mine.pk}"), 404)
    assert AdCabinet.objects.filter(pk=foreign.pk).exists()


def test_departments_may_name_the_widget_cabinets(api, widget, other_widget):
    mine, foreign = create_ad_cabinet(widget=widget, name="a"), create_ad_cabinet(widget=other_widget, name="f")
    client = api(scopes=["departments:write"])
    ok = client.post("/api/v1/departments", {"name": "Av", "channels": [f"av__{mine.pk}"]}, format="json", **idem())
    assert ok.status_code == 201, ok.content
    bad = client.post("/api/v1/departments", {"name": "F", "channels": [f"av__{foreign.pk}"]}, format="json", **idem())
    assert_problem(bad, 422)

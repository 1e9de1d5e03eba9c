"""The operator's Notifications section: the page with and without VAPID keys, a browser's
subscription posted by the page's script, choices per device, removal, another operator's device a
404, bad subscriptions refused with problem+json and nothing stored."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.agents.tests.factories import HumanAgentFactory
from apps.push import services
from apps.push.models import PushSubscription
from apps.push.tests.push_service import Device

pytestmark = pytest.mark.django_db

ENDPOINT = "https://push.example.net/send/abc"


@pytest.fixture
def vapid(settings):
    from apps.push.management.commands.generate_vapid_keys import new_pair

    settings.VAPID_PRIVATE_KEY, settings.VAPID_PUBLIC_KEY = new_pair()
    return settings.VAPID_PUBLIC_KEY


def post_json(client, url, body):
    import json

    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_without_vapid_keys_the_page_says_push_is_not_configured(console, settings):
    settings.VAPID_PRIVATE_KEY = settings.VAPID_PUBLIC_KEY = ""
    page = console.get("/console/notifications/")
    assert page.status_code == 200
    assert b"not configured" in page.content and b"push-allow" not in page.content
    refused = post_json(console, "/console/notifications/subscribe/", Device().subscription(ENDPOINT))
    assert refused.status_code == 404 and not PushSubscription.objects.exists()


def test_the_page_offers_push_with_the_public_key(console, vapid):
    page = console.get("/console/notifications/")
    assert page.status_code == 200
    assert f'data-public-key="{vapid}"'.encode() in page.content
    assert b'id="push-allow"' in page.content and b"console/push.js" in page.content


def test_the_script_posts_a_subscription_and_the_device_is_listed(console, operator, vapid):
    answer = post_json(console, "/console/notifications/subscribe/", Device().subscription(ENDPOINT))
    assert answer.status_code == 201
    row = PushSubscription.objects.get()
    assert (row.agent_id, row.widget_id, row.endpoint, row.previews) == (
        operator.pk,
        operator.widget_id,
        ENDPOINT,
        False,
    )
    assert answer.json() == {"id": row.pk, "key": answer.json()["key"]}
    page = console.get("/console/notifications/")
    assert f'data-device-key="{answer.json()["key"]}"'.encode() in page.content
    assert ENDPOINT.encode() not in page.content  # the capability URL is never shown back


def test_the_same_browser_again_updates_its_keys(console, vapid):
    post_json(console, "/console/notifications/subscribe/", Device().subscription(ENDPOINT))
    fresh = Device().subscription(ENDPOINT)
    post_json(console, "/console/notifications/subscribe/", fresh)
    row = PushSubscription.objects.get()
    assert row.p256dh == fresh["keys"]["p256dh"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"endpoint": "https://push.example.net/x", "keys": {"auth": "AAAA"}}, ["keys.auth", "keys.p256dh"]),
        ({"endpoint": "ftp://push.example.net/x"}, ["endpoint", "keys"]),
        (
            {"endpoint": "https://push.example.net/x", "keys": {"p256dh": "%%%", "auth": "x" * 200}},
            ["keys.auth", "keys.p256dh"],
        ),
        ("not an object", ["endpoint"]),
    ],
)
def test_a_bad_subscription_is_refused_and_nothing_is_stored(console, vapid, body, field, assert_problem):
    answer = post_json(console, "/console/notifications/subscribe/", body)
    assert_problem(answer, 422, "validation_failed")
    assert sorted(answer.json()["errors"]) == field
    assert not PushSubscription.objects.exists()


def test_a_plain_http_endpoint_is_refused(console, vapid, assert_problem):
    body = Device().subscription("http://push.example.net/x")
    answer = post_json(console, "/console/notifications/subscribe/", body)
    assert_problem(answer, 422, "validation_failed")
    assert list(answer.json()["errors"]) == ["endpoint"]


def test_choices_are_saved_per_device(console, operator, vapid):
    row = services.subscribe_device(agent=operator, data=Device().subscription(ENDPOINT))
    answer = console.post(f"/console/notifications/{row.pk}/", {"assigned": "on", "previews": "on"})
    assert answer.status_code == 303
    row.refresh_from_db()
    assert (row.assigned, row.queue, row.mention, row.sla, row.previews) == (True, False, False, False, True)


def test_a_device_is_removed(console, operator, vapid):
    row = services.subscribe_device(agent=operator, data=Device().subscription(ENDPOINT))
    assert console.post(f"/console/notifications/{row.pk}/remove/").status_code == 303
    assert not PushSubscription.objects.exists()


def test_another_operators_device_is_a_404(console, widget, other_widget, vapid):
    colleague = HumanAgentFactory(widget=widget, name="Carl")
    stranger = HumanAgentFactory(widget=other_widget, name="Sam")
    for agent in (colleague, stranger):
        row = services.subscribe_device(agent=agent, data=Device().subscription(ENDPOINT))
        assert console.post(f"/console/notifications/{row.pk}/", {"assigned": "on"}).status_code == 404
        assert console.post(f"/console/notifications/{row.pk}/remove/").status_code == 404
    assert PushSubscription.objects.count() == 2


def test_signed_out_the_section_sends_to_the_sign_in_page(vapid):
    answer = Client().get("/console/notifications/")
    assert answer.status_code == 302 and "/console/login/" in answer["Location"]

"""The deliveries documented as OpenAPI 3.1 webhooks, and real bodies checked against them."""

import json
from datetime import timedelta

import jsonschema
import pytest
from django.db import transaction
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from apps.chats import services as chats
from apps.core import events
from apps.core.models import OutboxEvent
from apps.erasure.models import PendingErasure
from apps.privacy import services as privacy
from apps.routing import sla
from apps.routing.models import SlaPolicy
from apps.webhooks import catalogue, payloads
from apps.webhooks.api import docs
from tests.support.factories import AgentFactory

pytestmark = pytest.mark.django_db


def body_variants(doc: dict, name: str) -> dict[str, dict]:
    schema = doc["webhooks"][name]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return {variant["title"]: variant for variant in schema["oneOf"]}


def test_the_schema_documents_every_event_in_both_envelopes_with_every_header():
    doc = SchemaGenerator().get_schema(request=None, public=True)
    assert set(doc["webhooks"]) == {"delivery", "legacy-delivery"}
    assert list(body_variants(doc, "delivery")) == list(catalogue.NATIVE_NAMES)
    assert list(body_variants(doc, "legacy-delivery")) == list(catalogue.LEGACY_NAMES)
    for name in ("delivery", "legacy-delivery"):
        headers = {p["name"] for p in doc["webhooks"][name]["post"]["parameters"] if p["in"] == "header"}
        assert headers == {
            "X-Service-Event",
            "X-Service-Signature",
            "X-Service-Idempotency-Key",
            "X-Service-Delivery",
            "X-Service-Timestamp",
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
        }
    for event_type, variant in body_variants(doc, "delivery").items():
        assert set(variant["properties"]["data"]["required"]) == {"button_guid", *events.CATALOGUE[event_type]}


def emitted_by_real_flows(widget) -> list[OutboxEvent]:
    """Every native event, from the services that emit it in production."""
    first, second = AgentFactory(widget=widget), AgentFactory(widget=widget)
    SlaPolicy.objects.create(widget=widget, name="Default", resolution_seconds=60)
    contact = chats.create_contact(widget=widget, name="Анна", email="anna@example.com", phone="+7 900 000-00-00")
    chats.submit_offline_message(widget=widget, contact=contact, message="Перезвоните", phone="+7 900 000-00-01")
    chat = contact.chats.get()
    chats.accept_chat(widget=widget, chat=chat, agent=first)
    chats.post_agent_message(widget=widget, chat=chat, agent=first, data=chats.MessageInput(body="Здравствуйте"))
    chats.transfer_chat(widget=widget, chat=chat, to_agent=second)
    chats.rate_chat(widget=widget, chat=chat, value=5)
    chats.create_label(widget=widget, name="Возврат")
    chats.set_chat_labels(widget=widget, chat=chat, names=["возврат"], by="agent")
    contact.refresh_from_db()
    chats.update_contact(widget=widget, contact=contact, changes={"name": "Анна П."})
    sla.breach_due(now=timezone.now() + timedelta(minutes=5))  # the SLA beat job, once it is due
    chats.close_chat(widget=widget, chat=chat, reason="resolved")
    with transaction.atomic():  # presence emits these from the agent socket
        events.emit(widget, events.AGENT_ONLINE, operator_id=first.pk)
        events.emit(widget, events.AGENT_OFFLINE, operator_id=first.pk)
    twin = chats.create_contact(widget=widget, name="Анна")
    chats.merge_contacts(widget=widget, source=twin, target=contact)
    erased = chats.create_contact(widget=widget, name="Борис")
    privacy.request_contact_erasure(widget=widget, contact=erased)
    privacy.erase_contact(pending_id=PendingErasure.objects.get(contact_id=erased.pk).pk)
    return list(OutboxEvent.objects.filter(widget=widget).order_by("created_at"))


def test_real_bodies_match_the_documented_schemas(widget):
    native, legacy = (docs.NATIVE_DELIVERY.decorator["post"], docs.LEGACY_DELIVERY.decorator["post"])
    native_schema = native["requestBody"]["content"]["application/json"]["schema"]
    legacy_schema = legacy["requestBody"]["content"]["application/json"]["schema"]
    seen_native, seen_legacy = set(), set()
    for event in emitted_by_real_flows(widget):
        body = json.loads(payloads.render(event, "native"))
        jsonschema.Draft202012Validator(native_schema, format_checker=jsonschema.FormatChecker()).validate(body)
        seen_native.add(body["type"])
        rendered = payloads.render(event, "legacy")
        if rendered is not None:
            body = json.loads(rendered)
            jsonschema.Draft202012Validator(legacy_schema).validate(body)
            seen_legacy.add(body["event_name"])
    assert seen_native == set(catalogue.NATIVE_NAMES)
    assert seen_legacy == set(catalogue.LEGACY_NAMES)


def test_a_body_with_a_member_the_schema_does_not_list_fails_it():
    schema = docs.native_body_schema(events.AGENT_ONLINE)
    body = {"id": "0b1e9f1c-6d8e-4f0e-9a51-7f1d7c1c9a10", "type": "agent.online", "data": {"button_guid": "x"}}
    jsonschema.validate({**body, "data": {**body["data"], "operator_id": 3}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**body, "data": {**body["data"], "operator_id": 3, "message": "hi"}}, schema)


def test_where_an_integrator_subscribes_the_schema_says_why_an_event_is_not_delivered_and_the_setting():
    doc = SchemaGenerator().get_schema(request=None, public=True)
    create = doc["paths"]["/api/v1/webhook-subscriptions"]["post"]
    assert "WEBHOOK_LIVE_EVENTS" in create["description"] and "Wired" in create["description"]
    ref = create["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    member = doc["components"]["schemas"][ref]["properties"]["not_live_events"]
    assert "WEBHOOK_LIVE_EVENTS" in member["description"]

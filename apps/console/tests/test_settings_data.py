"""The owner's data pages: contacts (list, search, pages, edit, tags, export, erase), retention and
the audit log. Each write answers like its API route (same refusals, same audit rows, the owner as
actor); another widget's contact is 404 on every page."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.audit import services as audit
from apps.audit.models import AuditEntry
from apps.chats.models import Contact, ContactTag, VisitorSession
from apps.chats.tests.factories import ChatFactory, ContactFactory, MessageFactory
from apps.erasure.models import PendingErasure
from apps.privacy import selectors as privacy
from apps.privacy import services as privacy_services

pytestmark = pytest.mark.django_db

BASE = "/console/settings/data/"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"key-{uuid.uuid4().hex}"}


def page_errors(response) -> list[str]:
    """The messages a refused form shows (under a field or above the form)."""
    html = response.content.decode()
    found = re.findall(r'<p class="error">(.*?)</p>', html, re.S)
    for block in re.findall(r'<div class="refusal" role="alert">(.*?)</div>', html, re.S):
        found += re.findall(r"<p>(.*?)</p>", block, re.S)
    return [unescape(text.strip()) for text in found]


def api_messages(response) -> list[str]:
    body = response.json()
    return [message for messages in body.get("errors", {}).values() for message in messages] or [body["detail"]]


def owner_rows(owner, action: str):
    return AuditEntry.objects.filter(
        widget=owner.widget, action=action, actor_type=AuditEntry.ActorType.AGENT, actor_id=str(owner.pk)
    )


@pytest.fixture
def anna(widget):
    contact = ContactFactory(widget=widget, name="Anna Smith", email="anna@example.com", phone="+7 900 111")
    ContactTag.objects.create(widget=widget, contact=contact, name="vip")
    chat = ChatFactory(contact=contact)
    MessageFactory(chat=chat, body="Hello")
    return contact


@pytest.fixture
def stranger(other_widget):
    return ContactFactory(widget=other_widget, name="Stranger", email="stranger@example.com")


# --- the list ----------------------------------------------------------------------------------------


def test_the_list_shows_each_contact_with_its_tags_last_seen_and_chat_count(owner_console, anna, stranger):
    seen = timezone.now() - timedelta(hours=2)
    VisitorSession.objects.create(widget=anna.widget, contact=anna, token_hash="h" * 64, last_seen_at=seen)
    response = owner_console.get(BASE)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Anna Smith" in page and "anna@example.com" in page and "+7 900 111" in page and "vip" in page
    row = re.search(r"Anna Smith</a></td>.*?</tr>", page, re.S).group(0)
    assert f'<time datetime="{timezone.localtime(seen).isoformat()}"' in row
    assert re.search(r"<td>1</td>\s*</tr>", row)
    assert "Stranger" not in page


def test_the_search_is_the_apis(owner_console, api, widget, anna):
    ContactFactory(widget=widget, name="Boris", email="boris@example.com", phone="+44 20")
    for text, found in (("ANNA", True), ("example.com", True), ("900", True), ("nobody", False)):
        page = owner_console.get(BASE, {"query": text}).content.decode()
        listed = {c["id"] for c in api().get("/api/v1/contacts", {"query": text}).json()["data"]}
        assert ("Anna Smith" in page) is found is (anna.guid in listed)
    assert "Boris" not in owner_console.get(BASE, {"query": "anna"}).content.decode()


def test_a_search_the_api_refuses_is_refused_with_its_words(owner_console, api, anna):
    text = "x" * 101
    response = owner_console.get(BASE, {"query": text})
    assert response.status_code == 422
    expected = api_messages(api().get("/api/v1/contacts", {"query": text}))
    assert [m.removeprefix("query: ") for m in page_errors(response)] == expected
    assert "Anna Smith" not in response.content.decode()


def test_the_list_pages_with_a_cursor(owner_console, widget):
    start = timezone.now() - timedelta(days=1)
    for n in range(30):
        ContactFactory(widget=widget, name=f"Person {n:02d}", created_at=start + timedelta(minutes=n))
    first = owner_console.get(BASE).content.decode()
    assert "Person 29" in first and "Person 05" in first and "Person 04" not in first
    cursor = re.search(r'cursor=([A-Za-z0-9_-]+)"', first).group(1)
    second = owner_console.get(BASE, {"cursor": cursor}).content.decode()
    assert "Person 04" in second and "Person 00" in second and "Person 05" not in second
    assert 'rel="next"' not in second


def test_a_forged_cursor_is_refused(owner_console, anna):
    response = owner_console.get(BASE, {"cursor": "bm90LWEtY3Vyc29y"})
    assert response.status_code == 422 and page_errors(response)


def _list_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(BASE).status_code == 200
    return len(queries)


def test_the_list_reads_a_fixed_number_of_queries_whatever_the_rows(owner_console, widget):
    def person(n):
        contact = ContactFactory(widget=widget, name=f"P{n}")
        ContactTag.objects.create(widget=widget, contact=contact, name=f"t{n}")
        MessageFactory(chat=ChatFactory(contact=contact))
        VisitorSession.objects.create(widget=widget, contact=contact, token_hash=f"{n:064d}")

    person(0)
    few = _list_queries(owner_console)
    for n in range(1, 20):
        person(n)
    many = _list_queries(owner_console)
    assert many == few, (few, many)


# --- a contact's page -------------------------------------------------------------------------------------


def test_a_contact_page_shows_details_attributes_tags_and_links_to_its_chats(owner_console, anna):
    Contact.objects.filter(pk=anna.pk).update(attributes={"plan": "gold"})
    chat = anna.chats.get()
    response = owner_console.get(f"{BASE}contacts/{anna.guid}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'value="Anna Smith"' in page and "plan" in page and "gold" in page and "vip" in page
    assert f'href="/console/chats/{chat.pk}/"' in page
    assert f'href="{BASE}contacts/{anna.guid}/export/"' in page and f"{BASE}contacts/{anna.guid}/erase/" in page


def test_editing_the_details_saves_them(owner_console, anna):
    response = owner_console.post(
        f"{BASE}contacts/{anna.guid}/edit/", {"name": "Anna K.", "email": "ak@example.com", "phone": "+7 900 222"}
    )
    assert response.status_code == 303 and response.url == f"{BASE}contacts/{anna.guid}/"
    anna.refresh_from_db()
    assert (anna.name, anna.email, anna.phone) == ("Anna K.", "ak@example.com", "+7 900 222")


@pytest.mark.parametrize("field,value", [("email", "not-an-address"), ("phone", "call me"), ("name", "x" * 256)])
def test_a_bad_detail_is_refused_with_the_apis_words(owner_console, api, anna, field, value):
    response = owner_console.post(f"{BASE}contacts/{anna.guid}/edit/", {"name": anna.name, field: value})
    assert response.status_code == 422
    api_answer = api().patch(f"/api/v1/contacts/{anna.guid}", {field: value}, format="json", **idem())
    assert api_answer.status_code == 422
    assert page_errors(response) == api_messages(api_answer)
    anna.refresh_from_db()
    assert anna.email == "anna@example.com" and anna.phone == "+7 900 111" and anna.name == "Anna Smith"


def test_an_attribute_is_set_and_removed(owner_console, anna):
    url = f"{BASE}contacts/{anna.guid}/attribute/"
    assert owner_console.post(url, {"key": "plan", "value": "gold"}).status_code == 303
    anna.refresh_from_db()
    assert anna.attributes == {"plan": "gold"}
    assert owner_console.post(f"{url}remove/", {"key": "plan"}).status_code == 303
    anna.refresh_from_db()
    assert anna.attributes == {}


def test_an_attribute_too_large_is_refused_with_the_apis_words(owner_console, api, anna):
    value = "x" * (17 * 1024)
    response = owner_console.post(f"{BASE}contacts/{anna.guid}/attribute/", {"key": "notes", "value": value})
    assert response.status_code == 422
    api_answer = api().patch(f"/api/v1/contacts/{anna.guid}", {"attributes": {"notes": value}}, format="json", **idem())
    assert page_errors(response) == api_messages(api_answer)
    anna.refresh_from_db()
    assert anna.attributes == {}


def test_tags_are_added_and_removed(owner_console, anna):
    url = f"{BASE}contacts/{anna.guid}/tags/"
    assert owner_console.post(url, {"tags": "lead, paid , vip"}).status_code == 303
    assert sorted(anna.tags.values_list("name", flat=True)) == ["lead", "paid", "vip"]
    assert owner_console.post(f"{url}remove/", {"tag": "vip"}).status_code == 303
    assert owner_console.post(f"{url}remove/", {"tag": "never-there"}).status_code == 303
    assert sorted(anna.tags.values_list("name", flat=True)) == ["lead", "paid"]


def test_a_bad_tag_is_refused_with_the_apis_words(owner_console, api, anna):
    name = "t" * 65
    response = owner_console.post(f"{BASE}contacts/{anna.guid}/tags/", {"tags": name})
    assert response.status_code == 422
    api_answer = api().post(f"/api/v1/contacts/{anna.guid}/tags", {"tags": [name]}, format="json", **idem())
    [shown] = page_errors(response)
    [expected] = api_messages(api_answer)
    assert shown.endswith(f": {expected}")
    assert list(anna.tags.values_list("name", flat=True)) == ["vip"]


# --- export and erasure ---------------------------------------------------------------------------------


def test_the_export_is_the_apis_document(owner_console, api, anna):
    response = owner_console.get(f"{BASE}contacts/{anna.guid}/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="contact-{anna.guid}.json"'
    document = json.loads(b"".join(response.streaming_content))
    from_api = json.loads(b"".join(api().get(f"/api/v1/contacts/{anna.guid}/export").streaming_content))
    for doc in (document, from_api):
        doc.pop("exported_at"), doc.pop("links_expire_at")
    assert document == from_api
    assert document["contact"]["name"] == "Anna Smith" and "Hello" in json.dumps(document["chats"][0]["messages"])


def test_the_export_keeps_the_apis_cap_on_exports_in_flight(owner_console, api, anna):
    held = [privacy.CONTACT_EXPORTS.acquire(anna.widget_id) for _ in range(privacy.CONTACT_EXPORTS.count)]
    try:
        response = owner_console.get(f"{BASE}contacts/{anna.guid}/export/")
        api_answer = api().get(f"/api/v1/contacts/{anna.guid}/export")
    finally:
        for slot in held:
            privacy.CONTACT_EXPORTS.release(slot)
    assert response.status_code == 429 and api_answer.status_code == 429
    assert response["Retry-After"] == api_answer["Retry-After"]
    assert page_errors(response) == [api_answer.json()["detail"]]


def test_the_erase_confirmation_names_what_goes(owner_console, anna):
    MessageFactory(chat=anna.chats.get(), body="Second")
    response = owner_console.get(f"{BASE}contacts/{anna.guid}/erase/")
    assert response.status_code == 200
    page = response.content.decode()
    counts = privacy.erasure_counts(contact=anna)
    assert counts == {"chats": 1, "messages": 2, "files": 0}
    assert "1 chat, on every channel." in page and "2 messages, notes included." in page and "0 files" in page
    assert "This cannot be undone." in page
    assert not PendingErasure.objects.exists()


def test_erasing_queues_the_erasure_audited_with_the_owner(owner_console, owner, anna, settings):
    response = owner_console.post(f"{BASE}contacts/{anna.guid}/erase/")
    assert response.status_code == 303 and response.url == BASE
    assert PendingErasure.objects.filter(contact_id=anna.pk).exists()
    [row] = owner_rows(owner, "contact.erased")
    assert row.target_id == anna.guid and row.actor_name == owner.name
    assert "Anna Smith" not in owner_console.get(BASE).content.decode()
    for path in ("", "erase/", "export/"):
        assert owner_console.get(f"{BASE}contacts/{anna.guid}/{path}").status_code == 404
    assert owner_console.post(f"{BASE}contacts/{anna.guid}/erase/").status_code == 404


# --- retention -------------------------------------------------------------------------------------------


def test_retention_is_explained_and_set_audited_with_the_owner(owner_console, owner, widget):
    page = owner_console.get(f"{BASE}retention/")
    assert page.status_code == 200 and "Chats are kept until you erase them." in page.content.decode()
    response = owner_console.post(f"{BASE}retention/", {"keep": "days", "chats_days": "90"})
    assert response.status_code == 303
    assert privacy_services.get_retention(widget=widget) == 90
    [row] = owner_rows(owner, "retention.changed")
    assert row.changes == {"chats_days": {"from": None, "to": 90}}
    assert (
        "Chats are erased 90 days after their last message." in owner_console.get(f"{BASE}retention/").content.decode()
    )
    assert owner_console.post(f"{BASE}retention/", {"keep": "forever", "chats_days": "90"}).status_code == 303
    assert privacy_services.get_retention(widget=widget) is None


@pytest.mark.parametrize("typed,sent", [("10", 10), ("3651", 3651), ("ninety", "ninety"), ("", "")])
def test_a_bad_retention_is_refused_with_the_apis_words(owner_console, api, widget, typed, sent):
    response = owner_console.post(f"{BASE}retention/", {"keep": "days", "chats_days": typed})
    assert response.status_code == 422
    api_answer = api().put("/api/v1/widget/retention", {"chats_days": sent}, format="json", **idem())
    assert api_answer.status_code == 422
    assert page_errors(response) == api_messages(api_answer)
    assert privacy_services.get_retention(widget=widget) is None
    assert not AuditEntry.objects.filter(action="retention.changed").exists()


# --- the audit log ---------------------------------------------------------------------------------------


def _entry(widget, *, action, actor, target_type="widget", at=None, changes=None):
    with audit.acting(actor):
        audit.record(widget=widget, action=action, target_type=target_type, target_id="x", changes=changes or {})
    entry = AuditEntry.objects.filter(widget=widget).latest("id")
    if at is not None:
        AuditEntry.objects.filter(pk=entry.pk).update(at=at)
    return entry


def test_the_audit_log_shows_who_what_when_and_hidden_secrets(owner_console, owner, widget, other_widget):
    _entry(
        widget,
        action="ai_credential.changed",
        actor=audit.Actor(AuditEntry.ActorType.TOKEN, "7", "CRM sync"),
        target_type="ai_credential",
        changes={"api_key": {"from": "sk-old", "to": "sk-new"}, "model": {"from": "a", "to": "b"}},
    )
    _entry(other_widget, action="widget.changed", actor=audit.SYSTEM)
    response = owner_console.get(f"{BASE}audit/")
    assert response.status_code == 200
    page = unescape(response.content.decode())
    assert "CRM sync" in page and "ai_credential.changed" in page and "[hidden]" in page
    assert "sk-old" not in page and "sk-new" not in page
    assert "widget.changed" not in page


def test_the_audit_log_filters_by_actor_target_and_days(owner_console, owner, widget):
    now = timezone.now()
    _entry(widget, action="token.issued", actor=audit.agent_actor(owner), target_type="token", at=now)
    _entry(widget, action="widget.changed", actor=audit.SYSTEM, at=now - timedelta(days=10))
    by_actor = owner_console.get(f"{BASE}audit/", {"actor": "agent"}).content.decode()
    assert "token.issued" in by_actor and "widget.changed" not in by_actor
    by_target = owner_console.get(f"{BASE}audit/", {"target": "widget"}).content.decode()
    assert "widget.changed" in by_target and "token.issued" not in by_target
    old_day = (now - timedelta(days=5)).date().isoformat()
    older = owner_console.get(f"{BASE}audit/", {"end": old_day}).content.decode()
    assert "widget.changed" in older and "token.issued" not in older


def test_a_bad_audit_filter_is_refused_with_the_apis_words(owner_console, api, widget):
    response = owner_console.get(f"{BASE}audit/", {"start": "2026-05-02", "end": "2026-05-01"})
    assert response.status_code == 422
    api_answer = api().get("/api/v1/audit-log", {"from": "2026-05-02", "to": "2026-05-01"})
    assert page_errors(response) == api_messages(api_answer)
    response = owner_console.get(f"{BASE}audit/", {"start": "yesterday"})
    api_answer = api().get("/api/v1/audit-log", {"from": "yesterday"})
    assert response.status_code == 422 and page_errors(response) == api_messages(api_answer)
    assert owner_console.get(f"{BASE}audit/", {"actor": "robot"}).status_code == 422


def test_the_audit_log_pages(owner_console, widget):
    now = timezone.now()
    for n in range(35):
        _entry(widget, action=f"widget.changed{n:02d}", actor=audit.SYSTEM, at=now - timedelta(minutes=n))
    first = owner_console.get(f"{BASE}audit/", {"actor": "system"}).content.decode()
    assert "widget.changed00" in first and "widget.changed29" in first and "widget.changed30" not in first
    href = unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))
    assert "actor=system" in href
    second = owner_console.get(href).content.decode()
    assert "widget.changed30" in second and "widget.changed34" in second and "widget.changed29" not in second


# --- tenancy ---------------------------------------------------------------------------------------------


def test_another_widgets_contact_is_404_on_every_page(owner_console, stranger):
    pages = {
        "": ("get",),
        "edit/": ("post",),
        "attribute/": ("post",),
        "attribute/remove/": ("post",),
        "tags/": ("post",),
        "tags/remove/": ("post",),
        "export/": ("get",),
        "erase/": ("get", "post"),
    }
    data = {"name": "Mine", "key": "k", "value": "v", "tags": "mine", "tag": "x"}
    for path, methods in pages.items():
        for method in methods:
            response = getattr(owner_console, method)(f"{BASE}contacts/{stranger.guid}/{path}", data)
            assert response.status_code == 404, (method, path)
    stranger.refresh_from_db()
    assert stranger.name == "Stranger" and not stranger.tags.exists()
    assert not PendingErasure.objects.exists() and not AuditEntry.objects.exists()

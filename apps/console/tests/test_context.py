"""The chat page's context panel: the contact (edited by the rules and messages of the REST API's
contact routes), earlier chats of the contact, the chat's routing and its private notes."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.agents.tests.factories import DepartmentFactory
from apps.chats.models import Chat, Contact, ContactTag, Message, VisitorSession
from apps.chats.services import ATTRIBUTES_MAX_BYTES
from apps.chats.tests.factories import ChatFactory, MessageFactory

from .conftest import make_chat

pytestmark = pytest.mark.django_db


def panel(client, chat) -> str:
    """The #context fragment of the chat page."""
    html = client.get(f"/console/chats/{chat.pk}/").content.decode()
    start = html.index('<section id="context"')
    return html[start : html.index("</aside>", start)]


def url(chat, action: str) -> str:
    return f"/console/chats/{chat.pk}/{action}/"


def fields(contact: Contact) -> tuple:
    contact = Contact.objects.get(pk=contact.pk)
    tags = sorted(ContactTag.objects.filter(contact=contact).values_list("name", flat=True))
    return contact.name, contact.email, contact.phone, contact.attributes, tags, contact.updated_at


# --- what it shows ------------------------------------------------------------------------------------


def test_the_panel_shows_the_contact_tags_and_attributes(console, widget, chat):
    contact = chat.contact
    contact.email, contact.phone, contact.locale = "anna@example.com", "+7 900 000-00-00", "ru-RU"
    contact.attributes = {"plan": "gold", "orders": 3, "note": "<b>x</b>" + "y" * 300}
    contact.save()
    older = timezone.now() - timedelta(days=1)
    VisitorSession.objects.create(
        widget=widget, contact=contact, token_hash="a" * 64, page_url="https://shop.example/old", created_at=older
    )
    VisitorSession.objects.create(
        widget=widget, contact=contact, token_hash="b" * 64, page_url="https://shop.example/cart?step=2"
    )
    ContactTag.objects.create(widget=widget, contact=contact, name="vip")
    ContactTag.objects.create(widget=widget, contact=chat.contact, name="b2b")

    html = panel(console, chat)

    assert '<section id="context" class="context" aria-labelledby="context-title">' in html
    assert '<h2 id="context-title">' in html and "<details" not in html
    for title in ("Contact", "Attributes", "Tags", "Earlier chats", "Routing", "Notes"):
        assert re.search(rf"<h3 id=\"context-[a-z]+\">{title}</h3>", html), title
    assert 'value="Anna"' in html and 'value="anna@example.com"' in html and 'value="+7 900 000-00-00"' in html
    assert "<bdi>ru-RU</bdi>" in html
    # the newest session's page, as a link that takes nothing of the console along
    assert '<a href="https://shop.example/cart?step=2" rel="noopener noreferrer nofollow" target="_blank">' in html
    assert "shop.example/old" not in html
    assert html.index("<bdi>b2b</bdi>") < html.index("<bdi>vip</bdi>")
    assert "<dt><bdi>plan</bdi></dt>\n        <dd><bdi>gold</bdi></dd>" in html and "<bdi>3</bdi>" in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html and "y" * 190 + "…" in html
    assert "btn-primary" not in html  # the chat page's one primary action is the composer's Send


def test_a_page_address_that_is_not_http_is_text_not_a_link(console, widget, chat):
    VisitorSession.objects.create(
        widget=widget, contact=chat.contact, token_hash="c" * 64, page_url="javascript:alert(1)"
    )
    html = panel(console, chat)
    assert "javascript:alert(1)" in html and 'href="javascript' not in html


def test_earlier_chats_of_the_contact_newest_first_with_a_count_of_the_rest(console, widget, chat, other_widget):
    now = timezone.now()
    earlier = []
    for n in range(12):
        other = ChatFactory(contact=chat.contact, channel=f"ch{n}", status=Chat.Status.EXPIRED)
        MessageFactory(chat=other, body=f"words of chat {n} " + "more " * 30, created_at=now - timedelta(hours=n + 1))
        earlier.append(other)
    someone_else = make_chat(widget, name="Boris")
    foreign = make_chat(other_widget, name="Stranger")

    html = panel(console, chat)

    section = html[html.index('id="context-earlier"') : html.index('id="context-routing"')]
    links = re.findall(r'href="/console/chats/(\d+)/"', section)
    assert links == [str(c.pk) for c in earlier[:10]]  # newest first, at most ten
    assert "And 2 more chats." in section
    assert "<bdi>ch0</bdi> · closed" in section and "words of chat 0 more" in section
    assert "more " * 20 not in section  # the first words only
    assert str(chat.pk) not in links and str(someone_else.pk) not in links and str(foreign.pk) not in links


def test_routing_names_the_owner_department_handler_and_acceptance(console, widget, operator, colleague):
    accepted = timezone.now() - timedelta(minutes=5)
    chat = make_chat(
        widget,
        agent=colleague,
        department=DepartmentFactory(widget=widget, name="Sales"),
        handled_by=colleague,
        handled_by_type="human",
        accepted_by=colleague,
        accepted_by_type="human",
        accepted_at=accepted,
        awaiting_human_since=accepted,
    )
    html = panel(console, chat)
    section = html[html.index('id="context-routing"') : html.index('id="context-notes"')]
    assert "<dt>Owner</dt><dd><bdi>Pavel</bdi>" in section
    assert "<dt>Department</dt><dd><bdi>Sales</bdi>" in section
    assert "<dt>Handled by</dt><dd><bdi>Pavel</bdi>" in section
    assert f'<dt>Accepted by</dt><dd><bdi>Pavel</bdi> · <time datetime="{accepted.isoformat()}">' in section
    assert "Waiting for a person since" in section


def test_routing_of_a_chat_the_ai_handles_and_nobody_owns(console, widget):
    chat = make_chat(widget, handled_by_type="ai", accepted_by_type="ai")
    section = panel(console, chat)
    section = section[section.index('id="context-routing"') : section.index('id="context-notes"')]
    assert '<dt>Owner</dt><dd><span class="context-none">nobody</span>' in section
    assert "<dt>Handled by</dt><dd>AI operator" in section and "<dt>Accepted by</dt><dd>AI operator" in section
    assert "Waiting for a person since" not in section  # only when set


def test_notes_newest_first_each_a_link_into_the_history(console, widget, chat, operator):
    now = timezone.now()
    notes = [
        MessageFactory(
            chat=chat,
            body=f"note {n} " + "detail " * 30,
            author_kind=Message.Author.AGENT,
            agent=operator,
            visibility=Message.Visibility.NOTE,
            created_at=now - timedelta(minutes=30 - n),
        )
        for n in range(3)
    ]
    public = MessageFactory(chat=chat, body="a public reply", author_kind=Message.Author.AGENT, agent=operator)
    html = panel(console, chat)
    section = html[html.index('id="context-notes"') :]
    links = re.findall(rf'href="/console/chats/{chat.pk}/#m-(\d+)"', section)
    assert links == [str(n.pk) for n in reversed(notes)]
    assert "<bdi>Olga</bdi>" in section and "note 2 detail" in section and "detail " * 20 not in section
    assert str(public.pk) not in links and "a public reply" not in section


def test_the_fragment_alone_and_a_foreign_chat_is_a_404(htmx, console, chat, foreign_chat):
    response = htmx.get(url(chat, "context"))
    assert response.status_code == 200
    assert response.content.decode().strip().startswith('<section id="context"')
    assert console.get(url(foreign_chat, "context")).status_code == 404
    assert console.get("/console/chats/99999999/context/").status_code == 404


def test_the_panel_costs_the_same_queries_whatever_the_earlier_chats_and_notes(htmx, widget, chat, operator):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert htmx.get(url(chat, "context")).status_code == 200
        return len(queries)

    def add(n: int) -> None:
        other = ChatFactory(contact=chat.contact, channel=f"c{n}")
        MessageFactory(chat=other, body=f"hello {n}")
        MessageFactory(chat=chat, body=f"note {n}", author_kind="agent", agent=operator, visibility="note")
        ContactTag.objects.create(widget=widget, contact=chat.contact, name=f"t{n}")

    add(0)
    few = count()
    for n in range(1, 25):
        add(n)
    assert count() == few


# --- editing the contact ----------------------------------------------------------------------------------


def test_editing_name_email_and_phone_saves_and_emits_contact_updated(htmx, chat, captured_events):
    response = htmx.post(url(chat, "contact"), {"name": "Anna K", "email": "anna@example.org", "phone": "+1 555"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.strip().startswith('<section id="context"') and 'value="Anna K"' in html and "Saved." in html
    assert "console:panel" in response["HX-Trigger"] and "console:list" in response["HX-Trigger"]
    contact = Contact.objects.get(pk=chat.contact_id)
    assert (contact.name, contact.email, contact.phone) == ("Anna K", "anna@example.org", "+1 555")
    [(kind, payload)] = captured_events()
    assert kind == "contact.updated" and payload["client_id"] == contact.guid
    assert payload["changed_fields"] == ["name", "email", "phone"]


def test_only_what_changed_is_sent(htmx, chat, captured_events):
    htmx.post(url(chat, "contact"), {"name": "Anna", "email": chat.contact.email, "phone": "+1 555"})
    assert [payload["changed_fields"] for _, payload in captured_events()] == [["phone"]]


def test_a_plain_edit_redirects_back_to_the_chat(console, chat):
    response = console.post(url(chat, "contact"), {"name": "Anna K", "email": "", "phone": ""})
    assert response.status_code == 303 and response["Location"] == f"/console/chats/{chat.pk}/"
    assert Contact.objects.get(pk=chat.contact_id).email == ""


def test_a_bad_email_is_a_422_with_the_apis_message_and_changes_nothing(htmx, console, chat, captured_events):
    before = fields(chat.contact)
    response = htmx.post(url(chat, "contact"), {"name": "Someone else", "email": "not-an-address", "phone": ""})
    assert response.status_code == 422
    html = response.content.decode()
    # the message of PATCH /v1/contacts/{id}, next to its field, the typed value kept
    assert re.search(
        r'<span class="error" id="contact_email-error" role="alert">Enter a valid email address\. </span>', html
    )
    assert 'value="not-an-address"' in html and 'aria-invalid="true"' in html
    plain = console.post(url(chat, "contact"), {"name": "Someone else", "email": "not-an-address"})
    assert plain.status_code == 422 and 'id="chat-panel"' in plain.content.decode()
    assert "Enter a valid email address." in plain.content.decode()
    assert fields(chat.contact) == before and captured_events() == []


def test_a_bad_phone_has_the_apis_message(htmx, chat):
    response = htmx.post(url(chat, "contact"), {"phone": "call me"})
    assert response.status_code == 422
    assert "Digits, spaces, parentheses and dashes, optionally led by +; at most 32." in response.content.decode()


def test_the_messages_are_the_apis(api, chat, htmx):
    """The same values sent to PATCH /v1/contacts/{id} are refused with the same messages."""
    body = {"name": "x" * 256, "email": "nope", "phone": "abc"}
    answer = api(scopes=["contacts:write"]).patch(
        f"/api/v1/contacts/{chat.contact.guid}", body, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="key-1"
    )
    assert answer.status_code == 422
    html = htmx.post(url(chat, "contact"), body).content.decode()
    for path, messages in answer.json()["errors"].items():
        for message in messages:
            assert f'id="contact_{path}-error" role="alert">{message} ' in html.replace("&#x27;", "'"), path


def test_an_attribute_is_added_and_changed(htmx, chat, captured_events):
    assert htmx.post(url(chat, "contact/attribute"), {"key": "plan", "value": "gold"}).status_code == 200
    response = htmx.post(url(chat, "contact/attribute"), {"key": "plan", "value": "platinum"})
    assert response.status_code == 200 and "<bdi>platinum</bdi>" in response.content.decode()
    assert Contact.objects.get(pk=chat.contact_id).attributes == {"plan": "platinum"}
    assert [payload["changed_fields"] for _, payload in captured_events()] == [["attributes"], ["attributes"]]


def test_an_attribute_key_is_removed(htmx, chat, captured_events):
    Contact.objects.filter(pk=chat.contact_id).update(attributes={"plan": "gold", "orders": 3})
    response = htmx.post(url(chat, "contact/attribute/remove"), {"key": "plan"})
    assert response.status_code == 200 and "<bdi>plan</bdi>" not in response.content.decode()
    assert Contact.objects.get(pk=chat.contact_id).attributes == {"orders": 3}
    assert [t for t, _ in captured_events()] == ["contact.updated"]


def test_attributes_over_the_size_limit_are_a_422_and_change_nothing(htmx, chat, captured_events):
    before = fields(chat.contact)
    response = htmx.post(url(chat, "contact/attribute"), {"key": "big", "value": "x" * ATTRIBUTES_MAX_BYTES})
    assert response.status_code == 422
    assert f"Must serialize to at most {ATTRIBUTES_MAX_BYTES} bytes." in response.content.decode()
    assert fields(chat.contact) == before and captured_events() == []


def test_attributes_that_would_merge_past_the_limit_are_a_422(htmx, chat, captured_events):
    half = "x" * (ATTRIBUTES_MAX_BYTES // 2)
    Contact.objects.filter(pk=chat.contact_id).update(attributes={"a": half})
    before = fields(chat.contact)
    response = htmx.post(url(chat, "contact/attribute"), {"key": "b", "value": half})
    assert response.status_code == 422
    assert f"The merged attributes would exceed {ATTRIBUTES_MAX_BYTES} bytes." in response.content.decode()
    assert fields(chat.contact) == before and captured_events() == []


def test_an_attribute_needs_a_name(htmx, chat):
    response = htmx.post(url(chat, "contact/attribute"), {"key": "", "value": "gold"})
    assert response.status_code == 422 and "Name the attribute to set." in response.content.decode()


def test_tags_are_added_and_an_existing_one_is_a_no_op(htmx, widget, chat):
    ContactTag.objects.create(widget=widget, contact=chat.contact, name="vip")
    response = htmx.post(url(chat, "contact/tags"), {"tags": "vip, b2b ,  ,returning"})
    assert response.status_code == 200
    assert sorted(ContactTag.objects.filter(contact=chat.contact).values_list("name", flat=True)) == [
        "b2b",
        "returning",
        "vip",
    ]
    assert "<bdi>returning</bdi>" in response.content.decode()


def test_a_tag_over_the_limit_is_a_422_naming_it_and_adds_nothing(htmx, chat):
    response = htmx.post(url(chat, "contact/tags"), {"tags": "fine, " + "t" * 65})
    assert response.status_code == 422
    assert f"«{'t' * 23}…»: Ensure this field has no more than 64 characters." in response.content.decode()
    assert not ContactTag.objects.filter(contact=chat.contact).exists()


def test_no_tags_is_a_422_with_the_apis_message(htmx, chat):
    response = htmx.post(url(chat, "contact/tags"), {"tags": " , "})
    assert response.status_code == 422 and "This list may not be empty." in response.content.decode()


@pytest.mark.parametrize(
    ("action", "data"),
    [
        ("contact", {"name": "Mallory"}),
        ("contact/attribute", {"key": "plan", "value": "free"}),
        ("contact/attribute/remove", {"key": "plan"}),
        ("contact/tags", {"tags": "pwned"}),
    ],
)
def test_a_foreign_or_missing_chat_is_a_404_and_changes_nothing(console, foreign_chat, action, data):
    Contact.objects.filter(pk=foreign_chat.contact_id).update(attributes={"plan": "gold"})
    before = fields(foreign_chat.contact)
    assert console.post(url(foreign_chat, action), data).status_code == 404
    assert console.post(f"/console/chats/99999999/{action}/", data).status_code == 404
    assert fields(foreign_chat.contact) == before


@pytest.mark.parametrize("action", ["contact", "contact/attribute", "contact/attribute/remove", "contact/tags"])
def test_edits_are_posts_that_need_the_csrf_token(operator, console, chat, action):
    assert console.get(url(chat, action)).status_code == 405
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator.user)
    assert client.post(url(chat, action), {"name": "x", "key": "k", "tags": "t"}).status_code == 403
    assert Client().post(url(chat, action), {"name": "x"})["Location"] == "/console/login/"

"""The Replies area (/console/settings/replies/): the canned responses' list with search, create,
edit and delete, over apps.canned.services with the API's serializers: the API's refusals in its
words, audit rows with the owner as actor, another widget's ids 404."""

import itertools
from html import unescape

import pytest

from apps.audit.models import AuditEntry
from apps.canned.models import CannedResponse
from apps.canned.tests.factories import CannedResponseFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

LIST = "/console/settings/replies/"
NEW = "/console/settings/replies/new/"
API = "/api/v1/canned-responses"
_keys = itertools.count()


def edit_url(row) -> str:
    return f"{LIST}{row.pk}/"


def delete_url(row) -> str:
    return f"{LIST}{row.pk}/delete/"


def body(**overrides) -> dict:
    return {"shortcut": "hello", "title": "Greeting", "text": "Hi {{contact.name|there}}!", "language": "", **overrides}


def api_body(values: dict) -> dict:
    return {**values, "language": values.get("language") or None}


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"replies-{next(_keys)}"}


def api_messages(problem: dict) -> list[str]:
    """What the page must show for the API's problem: its field messages, else its detail."""
    errors = problem.get("errors") or {}
    return [m for messages in errors.values() for m in messages] or [problem["detail"]]


def text(response) -> str:
    return unescape(response.content.decode())


def audited(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    return entry


# --- the list --------------------------------------------------------------------------------------


def test_the_list_shows_the_widgets_replies_only(owner_console, widget, other_widget):
    CannedResponseFactory(widget=widget, shortcut="refund", title="Refund policy")
    CannedResponseFactory(widget=other_widget, shortcut="stranger", title="Not yours")
    response = owner_console.get(LIST)
    assert response.status_code == 200
    page = text(response)
    assert "/refund" in page and "Refund policy" in page and "stranger" not in page
    assert 'action="/console/settings/replies/new/"' in page


def test_the_search_finds_shortcut_title_and_text(owner_console, widget):
    CannedResponseFactory(widget=widget, shortcut="refund", title="Return policy", text="Your money back")
    CannedResponseFactory(widget=widget, shortcut="hours", title="Opening hours", text="We open at nine")
    page = text(owner_console.get(LIST, {"q": "MONEY"}))
    assert "/refund" in page and "/hours" not in page
    page = text(owner_console.get(LIST, {"q": "nothing like it"}))
    assert "No reply matches." in page


def test_the_language_filter_keeps_that_language_and_any(owner_console, widget):
    CannedResponseFactory(widget=widget, shortcut="ru-only", language="ru")
    CannedResponseFactory(widget=widget, shortcut="en-only", language="en")
    CannedResponseFactory(widget=widget, shortcut="anyone", language=None)
    page = text(owner_console.get(LIST, {"language": "en"}))
    assert "/en-only" in page and "/anyone" in page and "/ru-only" not in page


@pytest.mark.parametrize("query", [{"q": "x" * 101}, {"language": "fr"}])
def test_a_bad_search_shows_the_apis_message(owner_console, api, widget, query):
    problem = assert_problem(api(scopes=["canned:read"]).get(API, query), 422)
    response = owner_console.get(LIST, query)
    assert response.status_code == 422
    for message in api_messages(problem):
        assert message in text(response)


# --- create ----------------------------------------------------------------------------------------


def test_the_owner_creates_a_reply_audited_as_the_owner(owner_console, owner, widget):
    response = owner_console.post(NEW, body(language="de"))
    assert response.status_code == 303 and response.url == LIST
    row = CannedResponse.objects.get(widget=widget)
    assert (row.shortcut, row.title, row.text, row.language) == (
        "hello",
        "Greeting",
        "Hi {{contact.name|there}}!",
        "de",
    )
    assert audited(owner, "canned_response.created").target_id == str(row.pk)
    assert "Reply /hello created." in text(owner_console.get(LIST))


def test_an_empty_language_is_any_language(owner_console, widget):
    owner_console.post(NEW, body())
    assert CannedResponse.objects.get(widget=widget).language is None


def test_the_new_reply_page_renders(owner_console):
    response = owner_console.get(NEW)
    assert response.status_code == 200 and 'name="shortcut"' in text(response)


@pytest.mark.parametrize(
    ("values", "status"),
    [
        (body(text="Hi {{contact.nam}}"), 422),  # unknown_variable
        (body(shortcut="Bad Shortcut!"), 422),
        (body(title="   "), 422),
        (body(text=""), 422),
        (body(shortcut="x" * 33), 422),
    ],
)
def test_a_refused_reply_shows_the_apis_messages_and_changes_nothing(owner_console, api, widget, values, status):
    problem = assert_problem(api().post(API, api_body(values), format="json", **idem()), status)
    response = owner_console.post(NEW, values)
    assert response.status_code == status
    for message in api_messages(problem):
        assert message in text(response)
    assert not CannedResponse.objects.filter(widget=widget).exists()
    assert not AuditEntry.objects.filter(action__startswith="canned_response").exists()


def test_a_taken_shortcut_is_409_with_the_apis_message(owner_console, api, widget):
    CannedResponseFactory(widget=widget, shortcut="hello")
    problem = assert_problem(api().post(API, api_body(body()), format="json", **idem()), 409, "shortcut_taken")
    response = owner_console.post(NEW, body())
    assert response.status_code == 409
    assert problem["detail"] in text(response)
    assert CannedResponse.objects.filter(widget=widget).count() == 1


def test_another_widgets_shortcut_is_free(owner_console, widget, other_widget):
    CannedResponseFactory(widget=other_widget, shortcut="hello")
    assert owner_console.post(NEW, body()).status_code == 303
    assert CannedResponse.objects.filter(widget=widget, shortcut="hello").exists()


# --- edit ------------------------------------------------------------------------------------------


def test_the_edit_page_shows_the_reply(owner_console, widget):
    row = CannedResponseFactory(widget=widget, shortcut="refund", title="Refund policy", text="Money back")
    page = text(owner_console.get(edit_url(row)))
    assert 'value="refund"' in page and "Money back" in page


def test_the_owner_edits_a_reply_audited_as_the_owner(owner_console, owner, widget):
    row = CannedResponseFactory(widget=widget, shortcut="refund", title="Refund policy")
    response = owner_console.post(
        edit_url(row), body(shortcut="refunds", title="Refunds", text="Within {{widget.name}}")
    )
    assert response.status_code == 303
    row.refresh_from_db()
    assert (row.shortcut, row.title, row.text) == ("refunds", "Refunds", "Within {{widget.name}}")
    audited(owner, "canned_response.changed")


def test_an_edit_to_a_taken_shortcut_is_409_with_the_apis_message(owner_console, api, widget):
    CannedResponseFactory(widget=widget, shortcut="taken")
    row = CannedResponseFactory(widget=widget, shortcut="mine", title="Mine")
    problem = assert_problem(
        api().patch(f"{API}/{row.pk}", {"shortcut": "taken"}, format="json", **idem()), 409, "shortcut_taken"
    )
    response = owner_console.post(edit_url(row), body(shortcut="taken", title="Mine"))
    assert response.status_code == 409 and problem["detail"] in text(response)
    row.refresh_from_db()
    assert row.shortcut == "mine"


def test_an_edit_with_an_unknown_variable_is_422_with_the_apis_message(owner_console, api, widget):
    row = CannedResponseFactory(widget=widget, shortcut="mine", text="Plain")
    problem = assert_problem(
        api().patch(f"{API}/{row.pk}", {"text": "Hi {{Contact.name}}"}, format="json", **idem()),
        422,
        "unknown_variable",
    )
    response = owner_console.post(edit_url(row), body(shortcut="mine", text="Hi {{Contact.name}}"))
    assert response.status_code == 422
    for message in api_messages(problem):
        assert message in text(response)
    row.refresh_from_db()
    assert row.text == "Plain"


# --- delete ----------------------------------------------------------------------------------------


def test_the_delete_asks_first_naming_the_reply(owner_console, widget):
    row = CannedResponseFactory(widget=widget, shortcut="refund", title="Refund policy")
    response = owner_console.get(delete_url(row))
    assert response.status_code == 200
    assert "/refund" in text(response) and "Refund policy" in text(response)
    assert CannedResponse.objects.filter(pk=row.pk).exists()


def test_the_owner_deletes_a_reply_audited_as_the_owner(owner_console, owner, widget):
    row = CannedResponseFactory(widget=widget, shortcut="refund")
    response = owner_console.post(delete_url(row))
    assert response.status_code == 303 and response.url == LIST
    assert not CannedResponse.objects.filter(pk=row.pk).exists()
    assert audited(owner, "canned_response.deleted").target_id == str(row.pk)


# --- tenancy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("page", [edit_url, delete_url])
def test_another_widgets_reply_is_404_like_a_missing_one(owner_console, other_widget, method, page):
    foreign = CannedResponseFactory(widget=other_widget, shortcut="stranger", title="Not yours")
    response = getattr(owner_console, method)(page(foreign), body())
    assert response.status_code == 404
    assert getattr(owner_console, method)(f"{LIST}999999999/", body()).status_code == 404
    foreign.refresh_from_db()
    assert (foreign.shortcut, foreign.title) == ("stranger", "Not yours")
    assert not AuditEntry.objects.filter(action__startswith="canned_response").exists()

"""/v1/canned-responses: list, create, read, PATCH, DELETE and render (product-decisions.md, "Canned
responses")."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.models import Agent
from apps.canned.models import CannedResponse
from apps.canned.tests.factories import CannedResponseFactory
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.erasure.models import PendingErasure
from apps.widget import services as widget_services
from tests.support.factories import AgentFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/canned-responses"
READ, WRITE = ["canned:read"], ["canned:write"]


def url(row_or_id) -> str:
    return f"{URL}/{getattr(row_or_id, 'pk', row_or_id)}"


def body(**overrides) -> dict:
    return {"shortcut": "hello", "title": "Greeting", "text": "Hi {{contact.name|there}}!", **overrides}


def chat_of(widget, **kwargs):
    return ChatFactory(contact=ContactFactory(widget=widget, name="Ann", email="ann@example.com"), **kwargs)


# --- list ----------------------------------------------------------------------------------------------


def test_list_serves_the_widgets_rows_by_shortcut(api, widget, other_widget):
    rows = [CannedResponseFactory(widget=widget, shortcut=s) for s in ("b", "c", "a")]
    CannedResponseFactory(widget=other_widget, shortcut="aa")
    data = api(scopes=READ).get(URL).json()["data"]
    assert [r["shortcut"] for r in data] == ["a", "b", "c"]
    assert set(data[0]) == {"id", "shortcut", "title", "text", "language", "created_at", "updated_at"}
    assert data[0]["id"] == rows[2].pk


def test_list_pages_by_cursor(api, widget):
    for i in range(5):
        CannedResponseFactory(widget=widget, shortcut=f"s{i}")
    client = api(scopes=READ)
    first = client.get(URL, {"limit": 2}).json()
    second = client.get(URL, {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get(URL, {"limit": 2, "cursor": second["next_cursor"]}).json()
    shortcuts = [r["shortcut"] for page in (first, second, third) for r in page["data"]]
    assert shortcuts == ["s0", "s1", "s2", "s3", "s4"] and third["next_cursor"] is None


@pytest.mark.parametrize("q", ["REFUND", "money back", "Return policy"])
def test_q_finds_shortcut_title_and_text_in_any_case(api, widget, q):
    hit = CannedResponseFactory(widget=widget, shortcut="refund", title="Return policy", text="Your money back")
    CannedResponseFactory(widget=widget, shortcut="other", title="Other", text="Nothing")
    data = api(scopes=READ).get(URL, {"q": q}).json()["data"]
    assert [r["id"] for r in data] == [hit.pk]


def test_language_filter_keeps_that_language_and_any(api, widget):
    CannedResponseFactory(widget=widget, shortcut="ru", language="ru")
    CannedResponseFactory(widget=widget, shortcut="en", language="en")
    CannedResponseFactory(widget=widget, shortcut="any", language=None)
    data = api(scopes=READ).get(URL, {"language": "en"}).json()["data"]
    assert [r["shortcut"] for r in data] == ["any", "en"]


@pytest.mark.parametrize("params", [{"language": "fr"}, {"q": "x" * 101}, {"unknown": "1"}, {"limit": "0"}])
def test_list_refuses_bad_parameters(api, widget, params):
    assert_problem(api(scopes=READ).get(URL, params), 422)


def test_list_needs_a_token_and_the_read_scope(api, client, widget):
    assert_problem(client.get(URL), 401)
    assert_problem(api(scopes=WRITE).get(URL), 403, "missing_scope")


def test_list_query_count_does_not_grow_with_rows(api, widget):
    client = api(scopes=READ)
    CannedResponseFactory(widget=widget)
    client.get(URL)
    with CaptureQueriesContext(connection) as one:
        assert client.get(URL).status_code == 200
    for _ in range(15):
        CannedResponseFactory(widget=widget)
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(URL).json()["data"]) == 16
    assert len(many) == len(one)


# --- create --------------------------------------------------------------------------------------------


def test_create_stores_and_answers_the_row(api, widget, idem):
    response = api(scopes=WRITE).post(URL, body(language="de"), format="json", **idem())
    assert response.status_code == 201, response.content
    data = response.json()
    row = CannedResponse.objects.get(pk=data["id"], widget=widget)
    assert (row.shortcut, row.title, row.text, row.language) == (
        "hello",
        "Greeting",
        "Hi {{contact.name|there}}!",
        "de",
    )
    assert data["language"] == "de" and data["shortcut"] == "hello"


def test_create_without_language_is_for_any_language(api, widget, idem):
    data = api(scopes=WRITE).post(URL, body(), format="json", **idem()).json()
    assert data["language"] is None


def test_create_needs_a_token_the_write_scope_and_a_key(api, client, widget, idem):
    assert_problem(client.post(URL, body(), content_type="application/json", **idem()), 401)
    assert_problem(api(scopes=READ).post(URL, body(), format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).post(URL, body(), format="json"), 400, "idempotency_key_missing")
    assert not CannedResponse.objects.exists()


def test_create_with_a_used_key_is_409_and_creates_nothing_more(api, widget, idem):
    client, key = api(scopes=WRITE), idem()
    assert client.post(URL, body(), format="json", **key).status_code == 201
    assert_problem(client.post(URL, body(shortcut="other"), format="json", **key), 409, "idempotency_key_reused")
    assert CannedResponse.objects.count() == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"shortcut": ""},
        {"shortcut": "Hello"},
        {"shortcut": "hi there"},
        {"shortcut": "x" * 33},
        {"shortcut": "привет"},
        {"shortcut": 5},
        {"title": ""},
        {"title": "x" * 101},
        {"title": "Refund\u202epolicy"},
        {"title": "Re\u200bfund"},
        {"text": ""},
        {"text": "   "},
        {"text": "x" * 4001},
        {"language": "fr"},
        {"language": "EN"},
        {"extra": 1},
    ],
)
def test_create_refuses_bad_input_and_changes_nothing(api, widget, idem, bad):
    assert_problem(api(scopes=WRITE).post(URL, body(**bad), format="json", **idem()), 422)
    assert not CannedResponse.objects.exists()


@pytest.mark.parametrize("good", [{"shortcut": "a"}, {"shortcut": "a_b-9" + "x" * 27}, {"title": "x" * 100}])
def test_create_accepts_the_limits(api, widget, idem, good):
    assert api(scopes=WRITE).post(URL, body(**good), format="json", **idem()).status_code == 201


def test_create_stores_the_title_as_a_label_in_nfc(api, widget, idem):
    response = api(scopes=WRITE).post(URL, body(title="Cafe\u0301"), format="json", **idem())
    assert response.status_code == 201
    assert CannedResponse.objects.get().title == "Caf\u00e9"


def test_create_accepts_4000_characters_of_text(api, widget, idem):
    assert api(scopes=WRITE).post(URL, body(text="x" * 4000), format="json", **idem()).status_code == 201


def test_create_refuses_unknown_variables_naming_them(api, widget, idem):
    text = "Hi {{contact.phone}} and {{Contact.name}} from {{agent.name|us}}"
    problem = assert_problem(
        api(scopes=WRITE).post(URL, body(text=text), format="json", **idem()), 422, "unknown_variable"
    )
    assert problem["offending"] == ["{{contact.phone}}", "{{Contact.name}}"]
    assert "text" in problem["errors"]
    assert not CannedResponse.objects.exists()


def test_create_with_a_taken_shortcut_is_409(api, widget, other_widget, idem):
    CannedResponseFactory(widget=widget, shortcut="hello")
    assert_problem(api(scopes=WRITE).post(URL, body(), format="json", **idem()), 409, "shortcut_taken")
    assert CannedResponse.objects.filter(widget=widget).count() == 1


def test_the_same_shortcut_in_another_widget_is_free(api, widget, other_widget, idem):
    CannedResponseFactory(widget=other_widget, shortcut="hello")
    assert api(scopes=WRITE).post(URL, body(), format="json", **idem()).status_code == 201


# --- read ----------------------------------------------------------------------------------------------


def test_read_answers_the_row(api, widget):
    row = CannedResponseFactory(widget=widget, language="ru")
    data = api(scopes=READ).get(url(row)).json()
    assert data["id"] == row.pk and data["language"] == "ru" and data["text"] == row.text


def test_read_of_a_foreign_or_missing_row_is_the_same_404(api, widget, other_widget):
    foreign = CannedResponseFactory(widget=other_widget)
    client = api(scopes=READ)
    a = assert_problem(client.get(url(foreign)), 404, "not_found")
    b = assert_problem(client.get(url(foreign.pk + 1000)), 404, "not_found")
    assert {k: v for k, v in a.items() if k != "instance"} == {k: v for k, v in b.items() if k != "instance"}


def test_read_needs_a_token_and_the_read_scope(api, client, widget):
    row = CannedResponseFactory(widget=widget)
    assert_problem(client.get(url(row)), 401)
    assert_problem(api(scopes=WRITE).get(url(row)), 403, "missing_scope")


# --- PATCH ---------------------------------------------------------------------------------------------


def test_patch_merges_the_members_sent(api, widget, idem):
    row = CannedResponseFactory(widget=widget, shortcut="old", title="Title", language="en")
    response = api(scopes=WRITE).patch(url(row), {"shortcut": "new", "language": None}, format="json", **idem())
    assert response.status_code == 200, response.content
    row.refresh_from_db()
    assert (row.shortcut, row.title, row.language) == ("new", "Title", None)
    assert response.json()["updated_at"] >= response.json()["created_at"]


def test_patch_to_a_taken_shortcut_is_409_and_changes_nothing(api, widget, idem):
    CannedResponseFactory(widget=widget, shortcut="taken")
    row = CannedResponseFactory(widget=widget, shortcut="mine", title="Mine")
    response = api(scopes=WRITE).patch(url(row), {"shortcut": "taken", "title": "New"}, format="json", **idem())
    assert_problem(response, 409, "shortcut_taken")
    row.refresh_from_db()
    assert (row.shortcut, row.title) == ("mine", "Mine")


def test_patch_keeping_its_own_shortcut_is_allowed(api, widget, idem):
    row = CannedResponseFactory(widget=widget, shortcut="mine")
    assert api(scopes=WRITE).patch(url(row), {"shortcut": "mine"}, format="json", **idem()).status_code == 200


@pytest.mark.parametrize(
    "bad, code",
    [
        ({"text": "{{agent.email}}"}, "unknown_variable"),
        ({"title": ""}, "validation_failed"),
        ({"shortcut": "A"}, "validation_failed"),
        ({"language": "xx"}, "validation_failed"),
        ({"id": 5}, "validation_failed"),
    ],
)
def test_patch_refuses_bad_input_and_changes_nothing(api, widget, idem, bad, code):
    row = CannedResponseFactory(widget=widget, text="Same")
    assert_problem(api(scopes=WRITE).patch(url(row), bad, format="json", **idem()), 422, code)
    row.refresh_from_db()
    assert row.text == "Same"


def test_patch_of_a_foreign_row_is_404(api, widget, other_widget, idem):
    foreign = CannedResponseFactory(widget=other_widget, title="Theirs")
    assert_problem(api(scopes=WRITE).patch(url(foreign), {"title": "Mine"}, format="json", **idem()), 404)
    foreign.refresh_from_db()
    assert foreign.title == "Theirs"


def test_patch_needs_a_token_the_write_scope_and_a_key(api, client, widget, idem):
    row = CannedResponseFactory(widget=widget)
    assert_problem(client.patch(url(row), {"title": "x"}, content_type="application/json", **idem()), 401)
    assert_problem(api(scopes=READ).patch(url(row), {"title": "x"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).patch(url(row), {"title": "x"}, format="json"), 400, "idempotency_key_missing")


# --- DELETE --------------------------------------------------------------------------------------------


def test_delete_removes_the_row(api, widget, idem):
    row = CannedResponseFactory(widget=widget)
    assert api(scopes=WRITE).delete(url(row), **idem()).status_code == 204
    assert not CannedResponse.objects.filter(pk=row.pk).exists()


def test_delete_of_a_foreign_row_is_404_and_keeps_it(api, widget, other_widget, idem):
    foreign = CannedResponseFactory(widget=other_widget)
    assert_problem(api(scopes=WRITE).delete(url(foreign), **idem()), 404, "not_found")
    assert CannedResponse.objects.filter(pk=foreign.pk).exists()


def test_delete_needs_a_token_the_write_scope_and_a_key(api, client, widget, idem):
    row = CannedResponseFactory(widget=widget)
    assert_problem(client.delete(url(row), **idem()), 401)
    assert_problem(api(scopes=READ).delete(url(row), **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).delete(url(row)), 400, "idempotency_key_missing")
    assert CannedResponse.objects.filter(pk=row.pk).exists()


# --- render --------------------------------------------------------------------------------------------

BOTH = ["canned:read", "chats:read"]
WITH_CONTACTS = [*BOTH, "contacts:read"]
EVERY = "{{contact.name}}|{{contact.email}}|{{agent.name}}|{{widget.name}}"
EVERY_WITH_FALLBACKS = "{{contact.name|n}}|{{contact.email|e}}|{{agent.name|a}}|{{widget.name|w}}"


def render(client, row, chat_id):
    return client.get(f"{url(row)}/render", {"chat_id": chat_id})


def test_render_fills_every_variable_for_the_chat(api, widget):
    widget_services.update_settings(widget=widget, body={"widget_name": "Shop"})
    chat = chat_of(widget, agent=AgentFactory(widget=widget, name="Bob"))
    row = CannedResponseFactory(widget=widget, text=EVERY_WITH_FALLBACKS)
    response = render(api(scopes=WITH_CONTACTS), row, chat.pk)
    assert response.status_code == 200, response.content
    assert response.json() == {"text": "Ann|ann@example.com|Bob|Shop"}


def test_render_without_contacts_read_leaves_the_contacts_variables_unfilled(api, widget):
    # a token that may not read contacts learns neither the name nor the e-mail through a reply
    widget_services.update_settings(widget=widget, body={"widget_name": "Shop"})
    chat = chat_of(widget, agent=AgentFactory(widget=widget, name="Bob"))
    client = api(scopes=BOTH)
    response = render(client, CannedResponseFactory(widget=widget, text=EVERY_WITH_FALLBACKS), chat.pk)
    assert response.status_code == 200, response.content
    assert response.json() == {"text": "n|e|Bob|Shop"}
    assert render(client, CannedResponseFactory(widget=widget, text=EVERY), chat.pk).json() == {"text": "||Bob|Shop"}


def test_render_takes_fallbacks_then_empty_strings_for_missing_values(api, widget):
    chat = ChatFactory(contact=ContactFactory(widget=widget, name="", email=""))
    client = api(scopes=WITH_CONTACTS)
    assert render(client, CannedResponseFactory(widget=widget, text=EVERY_WITH_FALLBACKS), chat.pk).json() == {
        "text": "n|e|a|w"
    }
    assert render(client, CannedResponseFactory(widget=widget, text=EVERY), chat.pk).json() == {"text": "|||"}


def test_render_names_only_a_human_agent(api, widget):
    bot = AgentFactory(widget=widget, name="Robot", type=Agent.Type.AI)
    chat = chat_of(widget, agent=bot)
    row = CannedResponseFactory(widget=widget, text="{{agent.name|our team}}")
    assert render(api(scopes=BOTH), row, chat.pk).json() == {"text": "our team"}


def test_render_of_a_foreign_chat_or_row_is_404(api, widget, other_widget):
    mine, theirs = CannedResponseFactory(widget=widget), CannedResponseFactory(widget=other_widget)
    my_chat, their_chat = chat_of(widget), chat_of(other_widget)
    client = api(scopes=BOTH)
    assert_problem(render(client, mine, their_chat.pk), 404, "not_found")
    assert_problem(render(client, mine, their_chat.pk + 1000), 404, "not_found")
    assert_problem(render(client, theirs, my_chat.pk), 404, "not_found")


def test_render_for_a_chat_whose_contact_is_under_erasure_is_404(api, widget):
    chat = chat_of(widget)
    row = CannedResponseFactory(widget=widget, text=EVERY)
    PendingErasure.objects.create(widget=widget, contact_id=chat.contact_id)
    assert_problem(render(api(scopes=BOTH), row, chat.pk), 404, "not_found")


@pytest.mark.parametrize("params", [{}, {"chat_id": "x"}, {"chat_id": "1", "extra": "1"}])
def test_render_refuses_a_bad_query(api, widget, params):
    row = CannedResponseFactory(widget=widget)
    assert_problem(api(scopes=BOTH).get(f"{url(row)}/render", params), 422)


@pytest.mark.parametrize("scopes", [["canned:read"], ["chats:read"], ["canned:write", "chats:read"]])
def test_render_needs_both_read_scopes(api, widget, scopes):
    row, chat = CannedResponseFactory(widget=widget), chat_of(widget)
    assert_problem(render(api(scopes=scopes), row, chat.pk), 403, "missing_scope")


def test_render_needs_a_token(client, widget):
    row, chat = CannedResponseFactory(widget=widget), chat_of(widget)
    assert_problem(client.get(f"{url(row)}/render", {"chat_id": chat.pk}), 401)

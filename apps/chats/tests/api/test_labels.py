"""/v1/labels (list, create, PATCH, DELETE), /v1/chats/{id}/labels (GET, PUT) and the chat list's
`label=` filter (product-decisions.md, "Team work")."""

import unicodedata
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.audit.models import AuditEntry
from apps.chats import services
from apps.chats.models import ChatLabel, Label
from apps.chats.tests.factories import ChatFactory, MessageFactory
from apps.erasure.models import PendingErasure
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

URL = "/api/v1/labels"
READ, WRITE = ["labels:read"], ["labels:write"]
LABELS_CHANGED = "chat.labels_changed"


def idem():
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"labels-{uuid.uuid4().hex}"}


def url(label) -> str:
    return f"{URL}/{getattr(label, 'pk', label)}"


def chat_url(chat) -> str:
    return f"/api/v1/chats/{getattr(chat, 'pk', chat)}/labels"


def make_chat(widget):
    return ChatFactory(widget=widget, contact__widget=widget)


def names_on(chat) -> list[str]:
    return sorted(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True))


def label_changes(captured_events):
    return [data for kind, data in captured_events() if kind == LABELS_CHANGED]


# --- /v1/labels ---------------------------------------------------------------------------------------


def test_list_serves_the_widgets_labels_by_name_without_regard_to_case(api, widget, other_widget):
    for name in ("beta", "Alpha", "gamma"):
        services.create_label(widget=widget, name=name)
    services.create_label(widget=other_widget, name="aaa")

    data = api(scopes=READ).get(URL).json()["data"]

    assert [row["name"] for row in data] == ["Alpha", "beta", "gamma"]
    assert set(data[0]) == {"id", "name", "color"} and data[0]["color"] is None


def test_list_pages_by_cursor(api, widget):
    for n in range(5):
        services.create_label(widget=widget, name=f"l{n}")
    client = api(scopes=READ)
    first = client.get(URL, {"limit": 2}).json()
    second = client.get(URL, {"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get(URL, {"limit": 2, "cursor": second["next_cursor"]}).json()

    assert [r["name"] for page in (first, second, third) for r in page["data"]] == [f"l{n}" for n in range(5)]
    assert third["next_cursor"] is None


def test_routes_need_a_token_and_their_scope(api, client, widget):
    label = services.create_label(widget=widget, name="vip")

    assert_problem(client.get(URL), 401)
    assert_problem(api(scopes=WRITE).get(URL), 403, "missing_scope")
    assert_problem(api(scopes=READ).post(URL, {"name": "x"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=READ).patch(url(label), {"name": "x"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=READ).delete(url(label), **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).post(URL, {"name": "x"}, format="json"), 400, "idempotency_key_missing")
    assert Label.objects.filter(widget=widget).count() == 1


def test_create_answers_201_with_the_label_in_nfc_and_audits_it(api, widget):
    response = api(scopes=WRITE).post(
        URL, {"name": unicodedata.normalize("NFD", " Éclair "), "color": "#AABBCC"}, format="json", **idem()
    )

    assert response.status_code == 201
    body = response.json()
    assert body == {"id": body["id"], "name": "Éclair", "color": "#aabbcc"}
    entry = AuditEntry.objects.get(action="label.created", target_id=str(body["id"]))
    assert entry.actor_type == "token"


def test_create_with_a_taken_name_in_another_case_is_409_label_taken(api, widget):
    services.create_label(widget=widget, name="Refund")

    body = assert_problem(api(scopes=WRITE).post(URL, {"name": "REFUND"}, format="json", **idem()), 409, "label_taken")

    assert "name" in body["errors"]
    assert Label.objects.filter(widget=widget).count() == 1


@pytest.mark.parametrize(
    "payload, member",
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 51}, "name"),
        ({"name": 5}, "name"),
        ({"name": "a\u200bb"}, "name"),
        ({"name": "ok", "color": "red"}, "color"),
        ({"name": "ok", "color": "#12345"}, "color"),
        ({"name": "ok", "extra": 1}, "extra"),
    ],
)
def test_create_refuses_bad_input_with_422_and_changes_nothing(api, widget, payload, member):
    body = assert_problem(api(scopes=WRITE).post(URL, payload, format="json", **idem()), 422, "validation_failed")

    assert member in body["errors"]
    assert not Label.objects.filter(widget=widget).exists()


def test_patch_renames_and_recolours_merge_safe(api, widget):
    label = services.create_label(widget=widget, name="vip", color="#000000")
    client = api(scopes=WRITE)

    assert client.patch(url(label), {"name": "VIP"}, format="json", **idem()).json()["color"] == "#000000"
    assert client.patch(url(label), {"color": None}, format="json", **idem()).json() == {
        "id": label.pk,
        "name": "VIP",
        "color": None,
    }


def test_patch_onto_another_labels_name_is_409_and_changes_nothing(api, widget):
    services.create_label(widget=widget, name="b2b")
    label = services.create_label(widget=widget, name="vip")

    assert_problem(api(scopes=WRITE).patch(url(label), {"name": "B2B"}, format="json", **idem()), 409, "label_taken")

    assert Label.objects.get(pk=label.pk).name == "vip"


def test_another_widgets_label_is_404_on_every_route(api, widget, other_widget):
    theirs = services.create_label(widget=other_widget, name="theirs")
    client = api(scopes=WRITE)

    assert_problem(client.patch(url(theirs), {"name": "mine"}, format="json", **idem()), 404, "not_found")
    assert_problem(client.delete(url(theirs), **idem()), 404, "not_found")
    assert_problem(client.delete(url(10**12), **idem()), 404, "not_found")
    assert Label.objects.get(pk=theirs.pk).name == "theirs"


def test_delete_takes_the_label_off_every_chat_and_announces_each(api, widget, captured_events):
    label = services.create_label(widget=widget, name="vip")
    services.create_label(widget=widget, name="b2b")
    chat = make_chat(widget)
    services.set_chat_labels(widget=widget, chat=chat, names=["vip", "b2b"], by="api")

    response = api(scopes=WRITE).delete(url(label), **idem())

    assert response.status_code == 204
    assert names_on(chat) == ["b2b"]
    assert label_changes(captured_events)[-1] == {
        "chat_id": chat.pk,
        "labels": ["b2b"],
        "button_guid": widget.button_guid,
    }
    assert AuditEntry.objects.filter(action="label.deleted", target_id=str(label.pk)).exists()


# --- /v1/chats/{id}/labels ----------------------------------------------------------------------------


@pytest.fixture
def labelled(widget):
    for name in ("Refund", "vip", "b2b"):
        services.create_label(widget=widget, name=name)
    return widget


def test_get_answers_the_chats_label_names(api, labelled):
    chat = make_chat(labelled)
    services.set_chat_labels(widget=labelled, chat=chat, names=["vip", "refund"], by="agent")

    assert api(scopes=["chats:read"]).get(chat_url(chat)).json() == {"labels": ["Refund", "vip"]}


def test_put_replaces_them_whole_and_emits_once(api, labelled, captured_events):
    chat = make_chat(labelled)
    services.set_chat_labels(widget=labelled, chat=chat, names=["vip"], by="agent")

    response = api(scopes=["chats:write"]).put(chat_url(chat), {"labels": ["B2B", "refund"]}, format="json", **idem())

    assert response.status_code == 200 and response.json() == {"labels": ["b2b", "Refund"]}
    assert names_on(chat) == ["Refund", "b2b"]
    assert label_changes(captured_events)[1:] == [
        {"chat_id": chat.pk, "labels": ["b2b", "Refund"], "button_guid": labelled.button_guid}
    ]


def test_put_of_the_same_set_emits_nothing(api, labelled, captured_events):
    chat = make_chat(labelled)
    services.set_chat_labels(widget=labelled, chat=chat, names=["vip"], by="agent")

    api(scopes=["chats:write"]).put(chat_url(chat), {"labels": ["VIP"]}, format="json", **idem())

    assert len(label_changes(captured_events)) == 1


@pytest.mark.parametrize(
    "payload, member",
    [
        ({"labels": ["vip", "nope"]}, "labels.1"),
        ({"labels": "vip"}, "labels"),
        ({"labels": [1]}, "labels.0"),
        ({"labels": [f"l{n}" for n in range(21)]}, "labels"),
        ({}, "labels"),
    ],
)
def test_put_refuses_bad_input_with_422_and_changes_nothing(api, labelled, captured_events, payload, member):
    chat = make_chat(labelled)
    services.set_chat_labels(widget=labelled, chat=chat, names=["b2b"], by="agent")

    body = assert_problem(
        api(scopes=["chats:write"]).put(chat_url(chat), payload, format="json", **idem()), 422, "validation_failed"
    )

    assert member in body["errors"]
    assert names_on(chat) == ["b2b"]
    assert len(label_changes(captured_events)) == 1


def test_put_of_another_widgets_label_name_is_422(api, labelled, other_widget):
    services.create_label(widget=other_widget, name="theirs")
    chat = make_chat(labelled)

    body = assert_problem(
        api(scopes=["chats:write"]).put(chat_url(chat), {"labels": ["theirs"]}, format="json", **idem()), 422
    )

    assert list(body["errors"]) == ["labels.0"]


def test_chat_labels_need_chats_scopes_and_a_key(api, client, labelled):
    chat = make_chat(labelled)

    assert_problem(client.get(chat_url(chat)), 401)
    assert_problem(api(scopes=["labels:read"]).get(chat_url(chat)), 403, "missing_scope")
    assert_problem(
        api(scopes=["chats:read"]).put(chat_url(chat), {"labels": []}, format="json", **idem()), 403, "missing_scope"
    )
    assert_problem(api(scopes=["chats:write"]).put(chat_url(chat), {"labels": []}, format="json"), 400)


def test_another_widgets_chat_or_an_erased_one_is_404(api, labelled, other_widget):
    theirs = make_chat(other_widget)
    erased = make_chat(labelled)
    PendingErasure.objects.create(widget=labelled, contact_id=erased.contact_id)

    for chat in (theirs, erased, 10**12):
        assert_problem(api(scopes=["chats:read"]).get(chat_url(chat)), 404, "not_found")
        assert_problem(
            api(scopes=["chats:write"]).put(chat_url(chat), {"labels": ["vip"]}, format="json", **idem()), 404
        )
    assert not ChatLabel.objects.exists()


# --- the chat list's label= -------------------------------------------------------------------------


def test_the_list_keeps_chats_carrying_every_label_named(api, labelled):
    both, vip_only, neither = (make_chat(labelled) for _ in range(3))
    for chat in (both, vip_only, neither):
        MessageFactory(chat=chat)
    services.set_chat_labels(widget=labelled, chat=both, names=["vip", "b2b"], by="api")
    services.set_chat_labels(widget=labelled, chat=vip_only, names=["vip"], by="api")
    client = api(scopes=["chats:read"])

    assert {row["id"] for row in client.get("/api/v1/chats?label=VIP").json()["data"]} == {both.pk, vip_only.pk}
    assert [row["id"] for row in client.get("/api/v1/chats?label=vip&label=b2b").json()["data"]] == [both.pk]
    assert [row["id"] for row in client.get("/api/v1/chats?label=vip&status=expired").json()["data"]] == []


def test_the_list_pages_by_cursor_under_a_label(api, labelled):
    chats = [make_chat(labelled) for _ in range(3)]
    for chat in chats:
        services.set_chat_labels(widget=labelled, chat=chat, names=["vip"], by="api")
    client = api(scopes=["chats:read"])

    first = client.get("/api/v1/chats", {"label": "vip", "limit": 2}).json()
    second = client.get("/api/v1/chats", {"label": "vip", "limit": 2, "cursor": first["next_cursor"]}).json()

    assert {row["id"] for page in (first, second) for row in page["data"]} == {chat.pk for chat in chats}


def test_an_unknown_label_in_the_list_filter_is_422(api, labelled, other_widget):
    services.create_label(widget=other_widget, name="theirs")

    body = assert_problem(api(scopes=["chats:read"]).get("/api/v1/chats?label=vip&label=theirs"), 422)

    assert "label" in body["errors"]
    assert_problem(api(scopes=["chats:read"]).get("/api/v1/chats?label="), 422)


def test_the_label_filter_costs_the_same_statements_for_more_labels(api, labelled):
    client = api(scopes=["chats:read"])
    client.get("/api/v1/chats?label=vip")  # the token's first use writes its last-used time
    with CaptureQueriesContext(connection) as one:
        client.get("/api/v1/chats?label=vip")
    with CaptureQueriesContext(connection) as three:
        client.get("/api/v1/chats?label=vip&label=b2b&label=refund")

    assert len(three) == len(one)

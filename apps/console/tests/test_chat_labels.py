"""Labels in the chat console: chips in the list (prefetched: the list's statements do not grow with
its rows), the list's shareable `?label=` filter, and setting a chat's labels from its details
(PUT /v1/chats/{id}/labels's rules and service)."""

from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.chats import services
from apps.chats.models import ChatLabel
from apps.console.tests.conftest import make_chat

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return unescape(response.content.decode())


def names_on(chat) -> list[str]:
    return sorted(ChatLabel.objects.filter(chat=chat).values_list("label__name", flat=True))


@pytest.fixture
def labels(widget):
    return {name: services.create_label(widget=widget, name=name, color="#aa0000") for name in ("vip", "Refund", "b2b")}


def test_the_list_shows_each_chats_labels_as_chips(console, widget, labels):
    chat = make_chat(widget, name="Anna")
    services.set_chat_labels(widget=widget, chat=chat, names=["vip", "refund"], by="agent")

    page = text(console.get("/console/"))

    assert page.count('class="label-chip"') == 2
    assert "<bdi>Refund</bdi>" in page and 'fill="#aa0000"' in page


def test_the_lists_statements_do_not_grow_with_its_labelled_rows(console, widget, labels):
    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert console.get("/console/").status_code == 200
        return len(queries)

    first = make_chat(widget, name="A")
    services.set_chat_labels(widget=widget, chat=first, names=["vip"], by="agent")
    console.get("/console/")
    few = statements()
    for n in range(5):
        chat = make_chat(widget, name=f"N{n}")
        services.set_chat_labels(widget=widget, chat=chat, names=["vip", "b2b", "refund"], by="agent")

    assert statements() == few


def test_the_list_filters_by_label_and_the_url_is_shareable(console, widget, labels):
    both, vip_only, _ = (make_chat(widget, name=n) for n in ("Both", "Vip", "None"))
    services.set_chat_labels(widget=widget, chat=both, names=["vip", "b2b"], by="agent")
    services.set_chat_labels(widget=widget, chat=vip_only, names=["vip"], by="agent")

    page = text(console.get("/console/?label=vip"))
    assert "Both" in page and "Vip" in page and ">None<" not in page
    assert '<option value="vip" selected>' in page

    page = text(console.get("/console/?label=vip&label=b2b"))
    assert "Both" in page and "<bdi>Vip</bdi>" not in page


def test_an_unknown_label_in_the_filter_says_so(console, widget, labels):
    page = text(console.get("/console/?label=nope"))

    assert "This widget has no label named “nope”." in page


def test_any_label_is_no_filter(console, widget, labels):
    make_chat(widget, name="Plain")

    assert "Plain" in text(console.get("/console/?label="))


def test_the_chat_shows_its_labels_and_the_picker(console, widget, chat, labels):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="agent")

    page = text(console.get(f"/console/chats/{chat.pk}/"))

    assert 'id="chat-labels"' in page
    assert f'id="chat-label-{labels["vip"].pk}" checked' in page
    assert f'id="chat-label-{labels["b2b"].pk}">' in page


def test_an_operator_sets_the_chats_labels(htmx, widget, chat, labels, captured_events):
    response = htmx.post(f"/console/chats/{chat.pk}/labels/", {"labels": ["b2b", "Refund"]})

    assert response.status_code == 200
    assert names_on(chat) == ["Refund", "b2b"]
    assert "console:list" in response["HX-Trigger"]
    assert [data["labels"] for kind, data in captured_events() if kind == "chat.labels_changed"] == [["b2b", "Refund"]]


def test_a_plain_post_sets_them_and_goes_back_to_the_chat(console, widget, chat, labels):
    response = console.post(f"/console/chats/{chat.pk}/labels/", {"labels": ["vip"]})

    assert response.status_code == 303 and response.url == f"/console/chats/{chat.pk}/"
    assert names_on(chat) == ["vip"]


def test_unchecking_every_label_takes_them_all_off(htmx, widget, chat, labels):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip", "b2b"], by="agent")

    assert htmx.post(f"/console/chats/{chat.pk}/labels/", {}).status_code == 200
    assert names_on(chat) == []


def test_a_refusal_shows_the_apis_words_and_changes_nothing(htmx, api, widget, chat, labels):
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="agent")
    problem = (
        api(scopes=["chats:write"])
        .put(
            f"/api/v1/chats/{chat.pk}/labels",
            {"labels": ["vip", "gone"]},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="labels-console-refusal",
        )
        .json()
    )

    response = htmx.post(f"/console/chats/{chat.pk}/labels/", {"labels": ["vip", "gone"]})

    assert response.status_code == 422
    assert problem["errors"]["labels.1"][0] in text(response)
    assert names_on(chat) == ["vip"]


def test_another_widgets_chat_is_404(htmx, foreign_chat, labels):
    assert htmx.post(f"/console/chats/{foreign_chat.pk}/labels/", {"labels": ["vip"]}).status_code == 404
    assert not ChatLabel.objects.exists()


def test_other_consoles_are_told_to_reread_the_chat(
    htmx, widget, chat, labels, monkeypatch, django_capture_on_commit_callbacks
):
    from apps.chats import realtime

    pushed = []
    monkeypatch.setattr(realtime, "push", lambda groups, frame: pushed.append((list(groups), frame)))
    with django_capture_on_commit_callbacks(execute=True):
        services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="agent")

    assert pushed == [([f"widget.{widget.pk}"], {"event": "chat", "chat_id": chat.pk, "status": chat.status})]

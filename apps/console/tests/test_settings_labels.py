"""The Labels area (/console/settings/labels/): list, create, rename, recolour and delete, over
apps.chats.services with the API's serializers: the API's refusals in its words, audit rows with
the owner as actor, another widget's ids 404."""

import uuid
from html import unescape

import pytest

from apps.audit.models import AuditEntry
from apps.chats import services
from apps.chats.models import ChatLabel, Label
from apps.console.tests.conftest import make_chat
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

LIST = "/console/settings/labels/"
NEW = "/console/settings/labels/new/"
API = "/api/v1/labels"


def edit_url(row) -> str:
    return f"{LIST}{row.pk}/"


def delete_url(row) -> str:
    return f"{LIST}{row.pk}/delete/"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"labels-{uuid.uuid4().hex}"}


def api_body(values: dict) -> dict:
    return {"name": values.get("name", ""), "color": values.get("color") or None}


def api_messages(problem: dict) -> list[str]:
    errors = problem.get("errors") or {}
    return [m for messages in errors.values() for m in messages] or [problem["detail"]]


def text(response) -> str:
    return unescape(response.content.decode())


def audited(owner, action: str) -> AuditEntry:
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    return entry


def test_the_list_shows_the_widgets_labels_only(owner_console, widget, other_widget):
    services.create_label(widget=widget, name="Refund", color="#aa0000")
    services.create_label(widget=other_widget, name="Stranger")

    response = owner_console.get(LIST)

    assert response.status_code == 200
    page = text(response)
    assert "Refund" in page and 'fill="#aa0000"' in page and "Stranger" not in page
    assert f'action="{NEW}"' in page


def test_the_settings_menu_lists_the_area(owner_console):
    assert f'href="{LIST}"' in text(owner_console.get("/console/settings/"))


def test_an_operator_gets_403(console):
    assert console.get(LIST).status_code == 403
    assert console.post(NEW, {"name": "x"}).status_code == 403
    assert not Label.objects.exists()


def test_the_owner_creates_a_label_audited_as_the_owner(owner_console, owner, widget):
    response = owner_console.post(NEW, {"name": "vip", "color": "#00AA00"})

    assert response.status_code == 303 and response.url == LIST
    row = Label.objects.get(widget=widget)
    assert (row.name, row.color) == ("vip", "#00aa00")
    assert audited(owner, "label.created").target_id == str(row.pk)
    assert "Label “vip” created." in text(owner_console.get(LIST))


@pytest.mark.parametrize(
    ("values", "status"),
    [
        ({"name": "VIP"}, 409),  # label_taken
        ({"name": ""}, 422),
        ({"name": "x" * 51}, 422),
        ({"name": "ok", "color": "red"}, 422),
        ({"name": "a\u200bb"}, 422),
    ],
)
def test_a_refused_label_shows_the_apis_messages_and_changes_nothing(owner_console, api, widget, values, status):
    services.create_label(widget=widget, name="vip")
    problem = assert_problem(api().post(API, api_body(values), format="json", **idem()), status)

    response = owner_console.post(NEW, values)

    assert response.status_code == status
    for message in api_messages(problem):
        assert message in text(response)
    assert Label.objects.filter(widget=widget).count() == 1


def test_the_owner_renames_and_recolours_audited(owner_console, owner, widget):
    row = services.create_label(widget=widget, name="vip")

    assert owner_console.get(edit_url(row)).status_code == 200
    response = owner_console.post(edit_url(row), {"name": "VIP customers", "color": "#123456"})

    assert response.status_code == 303
    row.refresh_from_db()
    assert (row.name, row.color) == ("VIP customers", "#123456")
    assert audited(owner, "label.changed").changes["name"] == {"from": "vip", "to": "VIP customers"}


def test_a_rename_onto_a_taken_name_shows_the_409_in_the_apis_words(owner_console, api, widget):
    services.create_label(widget=widget, name="b2b")
    row = services.create_label(widget=widget, name="vip")
    problem = assert_problem(api().patch(f"{API}/{row.pk}", {"name": "B2B"}, format="json", **idem()), 409)

    response = owner_console.post(edit_url(row), {"name": "B2B", "color": ""})

    assert response.status_code == 409
    for message in api_messages(problem):
        assert message in text(response)
    assert Label.objects.get(pk=row.pk).name == "vip"


def test_deleting_asks_first_then_takes_the_label_off_every_chat(owner_console, owner, widget, captured_events):
    row = services.create_label(widget=widget, name="vip")
    chat = make_chat(widget)
    services.set_chat_labels(widget=widget, chat=chat, names=["vip"], by="agent")

    confirm = owner_console.get(delete_url(row))
    assert confirm.status_code == 200 and "It is taken off the 1 chat that carries it" in text(confirm)
    response = owner_console.post(delete_url(row))

    assert response.status_code == 303
    assert not Label.objects.filter(pk=row.pk).exists() and not ChatLabel.objects.exists()
    assert captured_events()[-1] == (
        "chat.labels_changed",
        {"chat_id": chat.pk, "labels": [], "button_guid": widget.button_guid},
    )
    assert audited(owner, "label.deleted").target_id == str(row.pk)


def test_another_widgets_label_is_404_on_every_page(owner_console, other_widget):
    theirs = services.create_label(widget=other_widget, name="theirs")

    assert owner_console.get(edit_url(theirs)).status_code == 404
    assert owner_console.post(edit_url(theirs), {"name": "mine"}).status_code == 404
    assert owner_console.get(delete_url(theirs)).status_code == 404
    assert owner_console.post(delete_url(theirs)).status_code == 404
    assert Label.objects.get(pk=theirs.pk).name == "theirs"

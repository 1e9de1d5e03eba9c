"""The visitor rating route under the widget's rating settings (product-decisions.md, "Ratings (CSAT)
settings"): `off` refuses with 409 `rating_off`, `thumbs` takes 1 and 5 only, and the config tells
the widget the mode, scale and prompts."""

import pytest

from apps.chats.models import Contact, Rating
from apps.chats.tests.test_visitor_api import get, post, room_of, say, start
from apps.widget import services as widget_services
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(client, widget) -> str:
    return start(client, widget, name="Anna")["session_token"]


@pytest.fixture
def contact(client, widget, token) -> Contact:
    return Contact.objects.get(widget=widget)


def configure(widget, **values):
    widget_services.update_settings(widget=widget, body=values)


@pytest.mark.parametrize("mode", ["on_request", "after_close"])
def test_the_asking_modes_take_a_rating(client, widget, token, contact, mode):
    configure(widget, rating_mode=mode)
    say(client, widget, token)
    response = post(client, widget, "rating", {"value": 4}, token)
    assert response.status_code == 201, response.content
    assert Rating.objects.get(chat=room_of(contact)).value == 4


def test_off_refuses_the_rating_and_stores_nothing(client, widget, token, captured_events):
    configure(widget, rating_mode="off")
    say(client, widget, token)
    before = captured_events()
    assert_problem(post(client, widget, "rating", {"value": 5}, token), 409, "rating_off")
    assert not Rating.objects.exists()
    assert captured_events() == before


def test_off_is_refused_before_a_conversation_exists(client, widget, token):
    configure(widget, rating_mode="off")
    assert_problem(post(client, widget, "rating", {"value": 5}, token), 409, "rating_off")


@pytest.mark.parametrize("value", [1, 5])
def test_thumbs_store_1_and_5(client, widget, token, contact, value):
    configure(widget, rating_scale="thumbs")
    say(client, widget, token)
    assert post(client, widget, "rating", {"value": value}, token).status_code == 201
    assert Rating.objects.get(chat=room_of(contact)).value == value


@pytest.mark.parametrize("value", [2, 3, 4])
def test_thumbs_refuse_the_middle_values(client, widget, token, value):
    configure(widget, rating_scale="thumbs")
    say(client, widget, token)
    body = assert_problem(post(client, widget, "rating", {"value": value}, token), 422, "validation_failed")
    assert list(body["errors"]) == ["value"]
    assert not Rating.objects.exists()


@pytest.mark.parametrize("value", [1, 2, 3, 4, 5])
def test_five_takes_every_value(client, widget, token, contact, value):
    say(client, widget, token)
    assert post(client, widget, "rating", {"value": value}, token).status_code == 201


def test_the_config_carries_the_rating_settings(client, widget):
    configure(widget, rating_mode="after_close", rating_scale="thumbs", rating_prompt_i18n={"de": "Wie war es?"})
    body = get(client, widget, "config").json()
    settings = body["settings"]
    assert (settings["rating_mode"], settings["rating_scale"]) == ("after_close", "thumbs")
    assert settings["rating_prompt_i18n"] == {"de": "Wie war es?"}
    assert body["features"]["rating"] is True


def test_the_config_defaults_and_off(client, widget):
    settings = get(client, widget, "config").json()["settings"]
    assert (settings["rating_mode"], settings["rating_scale"], settings["rating_prompt_i18n"]) == (
        "on_request",
        "five",
        {},
    )
    configure(widget, rating_mode="off")
    assert get(client, widget, "config").json()["features"]["rating"] is False

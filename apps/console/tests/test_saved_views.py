"""Saved views: an operator keeps the list's filters under a name, finds them beside the views,
and deletes them; the names are theirs alone, compared without regard to case, at most 20."""

import pytest
from django.test import Client

from apps.console.models import SavedView
from apps.console.services import SAVED_VIEWS_MAX

from .conftest import make_chat

pytestmark = pytest.mark.django_db

FILTERS = {"view": "unassigned", "status": "expired", "channel": "tg", "q": "refund"}


def test_saving_keeps_the_filters_and_shows_the_list_with_them(console, operator):
    response = console.post("/console/views/", {**FILTERS, "name": "Telegram refunds"})
    assert response.status_code == 303
    assert response["Location"] == "/console/?view=unassigned&status=expired&channel=tg&q=refund"
    saved = SavedView.objects.get(agent=operator)
    assert (saved.name, saved.view, saved.status, saved.channel, saved.q) == (
        "Telegram refunds",
        "unassigned",
        "expired",
        "tg",
        "refund",
    )
    html = console.get(response["Location"]).content.decode()
    assert (
        '<a class="saved-view" href="/console/?view=unassigned&amp;status=expired&amp;channel=tg&amp;q=refund"' in html
    )
    assert 'aria-current="true"><bdi>Telegram refunds</bdi>' in html  # the filters shown are this view's


def test_a_saved_view_lists_what_its_filters_find(console, widget, operator):
    tg = make_chat(widget, name="Tg", body="about a refund", channel="tg", status="expired")
    web = make_chat(widget, name="Web", body="about a refund", status="expired")
    console.post("/console/views/", {**FILTERS, "name": "Telegram refunds"})
    html = console.get("/console/?view=unassigned&status=expired&channel=tg&q=refund").content.decode()
    assert f'data-chat-id="{tg.pk}"' in html and f'data-chat-id="{web.pk}"' not in html


def test_names_are_the_operators_own_and_compared_without_case(console, widget, operator, colleague):
    SavedView.objects.create(widget=widget, agent=colleague, name="Mine", view="all", status="active")
    assert console.post("/console/views/", {"name": "Mine"}).status_code == 303  # another's name is free
    response = console.post("/console/views/", {"name": "MINE", "view": "mine"})
    assert response.status_code == 422
    assert "You already have a saved view with this name." in response.content.decode()
    assert SavedView.objects.filter(agent=operator).count() == 1


@pytest.mark.parametrize(
    "data, message",
    [
        ({"name": ""}, "Give the view a name."),
        ({"name": "   "}, "Give the view a name."),
        ({"name": "x" * 41}, "Keep the name to 40 characters."),
    ],
)
def test_a_bad_name_is_refused_and_saves_nothing(console, data, message):
    response = console.post("/console/views/", {**FILTERS, **data})
    assert response.status_code == 422 and message in response.content.decode()
    assert not SavedView.objects.exists()
    # the list stays as it was, and nothing of the form leaks into its links
    assert "csrfmiddlewaretoken" not in response.content.decode().split('id="chat-list"')[1]


def test_at_most_twenty(console, widget, operator):
    for n in range(SAVED_VIEWS_MAX):
        SavedView.objects.create(widget=widget, agent=operator, name=f"v{n}", view="all", status="active")
    response = console.post("/console/views/", {"name": "one more"})
    assert response.status_code == 422
    assert "You have 20 saved views already: delete one first." in response.content.decode()


def test_deleting_one_of_ones_own(console, widget, operator, colleague):
    mine = SavedView.objects.create(widget=widget, agent=operator, name="Mine", view="all", status="active")
    theirs = SavedView.objects.create(widget=widget, agent=colleague, name="Theirs", view="all", status="active")
    assert console.post(f"/console/views/{theirs.pk}/delete/").status_code == 404
    assert console.post(f"/console/views/{mine.pk}/delete/").status_code == 303
    assert list(SavedView.objects.values_list("name", flat=True)) == ["Theirs"]


def test_saved_views_are_posts_and_need_a_signed_in_operator(console, operator):
    assert console.get("/console/views/").status_code == 405
    response = Client().post("/console/views/", {"name": "x"})
    assert response.status_code == 302 and response["Location"] == "/console/login/"
    assert not SavedView.objects.exists()


def test_another_operators_saved_views_are_not_shown(console, widget, colleague):
    SavedView.objects.create(widget=widget, agent=colleague, name="Pavel's queue", view="all", status="active")
    assert "Pavel" not in console.get("/console/").content.decode().split('id="chat-list"')[0]

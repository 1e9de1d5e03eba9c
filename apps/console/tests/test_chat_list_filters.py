"""The chat list's drill-down filters (`from`, `to`, `channel`, `agent_id`, `rating`, `handling`):
what a figure of the reports counts, as shareable query parameters of the list."""

from datetime import date, datetime
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.chats.models import Chat, Rating
from apps.console.inbox import chat_list_links, chat_list_url
from apps.widget.hours import default_hours
from apps.widget.services import set_business_hours

from .conftest import make_chat

pytestmark = pytest.mark.django_db
MSK = ZoneInfo("Europe/Moscow")


def test_a_pages_links_are_the_lists_url_encoded_once():
    """The reports page builds its thousand links with one `chat_list_links()`: each equals the
    list's own URL with the filters `urlencode`d, the same link asked twice is the same string, and a
    value that needs quoting is quoted."""
    links = chat_list_links()
    first = links(**{"from": "2025-01-14", "to": "2025-01-14", "channel": "a b&c/é"}, rating=None)
    expected = {"view": "all", "status": "any", "from": "2025-01-14", "to": "2025-01-14", "channel": "a b&c/é"}
    assert first == f"{reverse('console:chats')}?{urlencode(expected)}"
    assert links(**{"from": "2025-01-14", "to": "2025-01-14", "channel": "a b&c/é"}, rating=None) is first
    assert links(agent_id=7, date_from=date(2025, 1, 2)) == chat_list_url(agent_id=7, date_from=date(2025, 1, 2))
    assert "agent_id=7" in links(agent_id=7, date_from=date(2025, 1, 2))


def listed(client, url: str) -> set[str]:
    response = client.get(url)
    assert response.status_code == 200
    return {c.contact.name for c in response.context["chats"]}


def at(chat: Chat, moment: datetime) -> Chat:
    Chat.objects.filter(pk=chat.pk).update(created_at=moment)
    return chat


def test_from_and_to_are_whole_days_in_moscow_by_default(console, widget):
    at(make_chat(widget, name="Late"), datetime(2025, 1, 14, 23, 59, tzinfo=MSK))
    at(make_chat(widget, name="Early"), datetime(2025, 1, 15, 0, 0, tzinfo=MSK))
    at(make_chat(widget, name="Last"), datetime(2025, 1, 16, 23, 59, tzinfo=MSK))
    at(make_chat(widget, name="After"), datetime(2025, 1, 17, 0, 0, tzinfo=MSK))
    assert listed(console, chat_list_url(date_from=date(2025, 1, 15), date_to=date(2025, 1, 16))) == {"Early", "Last"}


def test_from_and_to_follow_the_widgets_business_hours_time_zone(console, widget):
    set_business_hours(widget=widget, body=default_hours("America/New_York"))
    # 03:00 in Moscow on the 15th is 19:00 on the 14th in New York
    at(make_chat(widget, name="Evening"), datetime(2025, 1, 15, 3, 0, tzinfo=MSK))
    assert listed(console, chat_list_url(**{"from": "2025-01-14", "to": "2025-01-14"})) == {"Evening"}
    assert listed(console, chat_list_url(**{"from": "2025-01-15", "to": "2025-01-15"})) == set()


def test_channel_operator_rating_and_handling(console, widget, operator, colleague):
    mine = make_chat(widget, name="Mine", agent=operator, handling=Chat.Handling.HUMAN, handled_by_type="human")
    make_chat(widget, name="Theirs", agent=colleague, handling=Chat.Handling.HUMAN, handled_by_type="human")
    bot = make_chat(widget, name="Bot", channel="telegram", handling=Chat.Handling.AI, handled_by_type="ai")
    make_chat(widget, name="Nobody", channel="telegram")
    escalated = make_chat(
        widget, name="Escalated", handling=Chat.Handling.HUMAN, handled_by_type="human", went_ai_to_human=True
    )
    Rating.objects.create(widget=widget, chat=mine, value=2)
    Rating.objects.create(widget=widget, chat=mine, value=5)  # the latest counts
    Rating.objects.create(widget=widget, chat=bot, value=2)
    assert listed(console, chat_list_url(channel="telegram")) == {"Bot", "Nobody"}
    assert listed(console, chat_list_url(agent_id=operator.pk)) == {"Mine"}
    assert listed(console, chat_list_url(rating=5)) == {"Mine"}
    assert listed(console, chat_list_url(rating=2)) == {"Bot"}
    assert listed(console, chat_list_url(handling="ai")) == {"Bot"}
    assert listed(console, chat_list_url(handling="human")) == {"Mine", "Theirs", "Escalated"}
    assert listed(console, chat_list_url(handling="ai_to_human")) == {escalated.contact.name}
    assert listed(console, chat_list_url(handling="missed")) == {"Nobody"}
    assert listed(console, chat_list_url(handling="human", agent_id=colleague.pk)) == {"Theirs"}


def test_the_filters_combine_with_the_lists_own(console, widget):
    make_chat(widget, name="Open", channel="telegram")
    make_chat(widget, name="Closed", channel="telegram", status=Chat.Status.EXPIRED)
    assert listed(console, "/console/?channel=telegram&handling=missed") == {"Open"}
    assert listed(console, chat_list_url(channel="telegram", handling="missed")) == {"Open", "Closed"}


@pytest.mark.parametrize(
    "query",
    [
        "from=yesterday",
        "from=0001-01-01",
        "to=9999-12-31",
        "from=2025-02-01&to=2025-01-01",
        "agent_id=-4",
        "agent_id=99999999999999999999999",
        "rating=9",
        "handling=robots",
    ],
)
def test_a_bad_value_is_ignored_with_a_message(console, widget, query):
    make_chat(widget, name="Anna")
    response = console.get(f"/console/?{query}&status=any")
    assert response.status_code == 200
    assert {c.contact.name for c in response.context["chats"]} == {"Anna"}
    assert 'class="error" role="alert"' in response.content.decode()


def test_the_filters_in_force_show_as_removable_chips(console, widget, operator):
    page = console.get(chat_list_url(agent_id=operator.pk, handling="missed", date_from=date(2025, 1, 1))).content
    html = page.decode()
    assert "Operator: <bdi>Olga</bdi>" in html
    assert "Handling: <bdi>Missed</bdi>" in html
    assert "From: <bdi>2025-01-01</bdi>" in html
    # removing the operator keeps the others
    assert "?view=all&amp;status=any&amp;from=2025-01-01&amp;handling=missed" in html
    assert 'type="hidden" name="agent_id"' in html


def test_a_foreign_operator_shows_no_chats_and_no_name(console, widget, other_widget):
    from apps.agents.tests.factories import HumanAgentFactory

    stranger = HumanAgentFactory(widget=other_widget, name="Stranger")
    make_chat(other_widget, name="Theirs", agent=stranger)
    response = console.get(chat_list_url(agent_id=stranger.pk))
    assert response.status_code == 200
    assert list(response.context["chats"]) == []
    assert "Stranger" not in response.content.decode()


def test_the_query_count_does_not_grow_with_the_chats(console, widget, operator):
    url = chat_list_url(
        date_from=date(2000, 1, 1),
        date_to=date(2100, 1, 1),
        channel="widget",
        agent_id=operator.pk,
        rating=4,
        handling="human",
    )

    def count() -> int:
        console.get(url)  # the cached reads (the report time zone) warm, as on a busy console
        with CaptureQueriesContext(connection) as queries:
            console.get(url)
        return len(queries)

    def add():
        chat = make_chat(widget, agent=operator, handling=Chat.Handling.HUMAN, handled_by_type="human")
        Rating.objects.create(widget=widget, chat=chat, value=4)

    add()
    few = count()
    for _ in range(4):
        add()
    assert count() == few
    assert len(console.get(url).context["chats"]) == 5

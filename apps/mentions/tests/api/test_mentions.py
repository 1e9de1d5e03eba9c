"""GET /api/v1/mentions and POST /api/v1/mentions/{id}/read."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agents.tests.factories import HumanAgentFactory
from apps.mentions.models import Mention
from apps.mentions.tests.factories import MentionFactory, NoteFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(widget):
    return HumanAgentFactory(widget=widget, name="Bob")


def mention(widget, agent, *, minutes_ago=0, read=False, body="@Bob look"):
    at = timezone.now() - timedelta(minutes=minutes_ago)
    row = MentionFactory(message=NoteFactory(chat__contact__widget=widget, body=body), agent=agent, created_at=at)
    if read:
        Mention.objects.filter(pk=row.pk).update(read_at=at)
    return row


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["data"]]


def test_the_list_shows_unread_first_then_newest(api, widget, bob):
    old_unread = mention(widget, bob, minutes_ago=30)
    new_read = mention(widget, bob, minutes_ago=1, read=True)
    new_unread = mention(widget, bob, minutes_ago=5)
    old_read = mention(widget, bob, minutes_ago=60, read=True)
    assert ids(api(scopes=["chats:read"]).get("/api/v1/mentions")) == [
        new_unread.pk,
        old_unread.pk,
        new_read.pk,
        old_read.pk,
    ]


def test_a_mention_reads_as_its_fields(api, widget, bob):
    row = mention(widget, bob, body="@Bob  can you\ncheck?")
    (item,) = api().get("/api/v1/mentions").json()["data"]
    assert item == {
        "id": row.pk,
        "chat_id": row.chat_id,
        "message_id": row.message_id,
        "agent_id": bob.pk,
        "by_agent_id": row.by_agent_id,
        "text": "@Bob can you check?",
        "created_at": row.created_at.isoformat(),
        "read_at": None,
    }


def test_the_list_pages_with_a_cursor_in_its_order(api, widget, bob):
    rows = [mention(widget, bob, minutes_ago=i, read=i % 2 == 0) for i in range(5)]
    client = api()
    first = client.get("/api/v1/mentions?limit=3").json()
    second = client.get(f"/api/v1/mentions?limit=3&cursor={first['next_cursor']}").json()
    expected = [rows[i].pk for i in (1, 3, 0, 2, 4)]  # unread (odd) newest first, then read ones
    assert [r["id"] for r in first["data"] + second["data"]] == expected
    assert second["next_cursor"] is None


def test_filters_by_agent_and_by_unread(api, widget, bob):
    anna = HumanAgentFactory(widget=widget, name="Anna")
    for_bob, for_anna = mention(widget, bob), mention(widget, anna)
    read = mention(widget, bob, read=True)
    client = api()
    assert ids(client.get(f"/api/v1/mentions?agent_id={anna.pk}")) == [for_anna.pk]
    assert set(ids(client.get("/api/v1/mentions?unread=true"))) == {for_bob.pk, for_anna.pk}
    assert ids(client.get(f"/api/v1/mentions?unread=false&agent_id={bob.pk}")) == [read.pk]
    assert ids(client.get("/api/v1/mentions?agent_id=99999999999999999999999")) == []


def test_another_widgets_mentions_and_agents_never_show(api, widget, other_widget, bob):
    stranger = HumanAgentFactory(widget=other_widget, name="Bob")
    mention(other_widget, stranger)
    client = api()
    assert ids(client.get("/api/v1/mentions")) == []
    assert ids(client.get(f"/api/v1/mentions?agent_id={stranger.pk}")) == []


@pytest.mark.parametrize(
    "query,member",
    [("unread=yes", "unread"), ("agent_id=x", "agent_id"), ("colour=red", None), ("cursor=forged", "cursor")],
)
def test_bad_query_parameters_are_422(api, assert_problem, query, member):
    body = assert_problem(api().get(f"/api/v1/mentions?{query}"), 422)
    if member:
        assert member in body["errors"]


def test_read_marks_it_read_and_answers_200_and_again_the_same(api, widget, bob):
    row = mention(widget, bob)
    client = api(scopes=["chats:write"])
    first = client.post(f"/api/v1/mentions/{row.pk}/read")
    assert first.status_code == 200 and first.json()["id"] == row.pk and first.json()["read_at"]
    again = client.post(f"/api/v1/mentions/{row.pk}/read")
    assert again.status_code == 200 and again.json() == first.json()
    assert Mention.objects.get(pk=row.pk).read_at.isoformat() == first.json()["read_at"]


def test_read_of_another_widgets_or_a_missing_mention_is_404(api, assert_problem, widget, other_widget):
    foreign = mention(other_widget, HumanAgentFactory(widget=other_widget))
    client = api()
    assert_problem(client.post(f"/api/v1/mentions/{foreign.pk}/read"), 404, "not_found")
    assert_problem(client.post("/api/v1/mentions/987654321/read"), 404, "not_found")
    assert_problem(client.post("/api/v1/mentions/99999999999999999999999/read"), 404, "not_found")
    assert Mention.objects.get(pk=foreign.pk).read_at is None


def test_scopes(api, assert_problem, widget, bob):
    row = mention(widget, bob)
    assert_problem(api(scopes=["chats:write"]).get("/api/v1/mentions"), 403, "missing_scope")
    assert_problem(api(scopes=["chats:read"]).post(f"/api/v1/mentions/{row.pk}/read"), 403, "missing_scope")
    assert Mention.objects.get(pk=row.pk).read_at is None


def test_without_a_token_401(client, assert_problem):
    assert_problem(client.get("/api/v1/mentions"), 401)

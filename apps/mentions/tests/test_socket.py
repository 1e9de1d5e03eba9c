"""The mention frame over real operator sockets: it reaches the mentioned operator's consoles and no
other operator's, and it matches the AsyncAPI document. Transactions really commit here."""

import pytest
from channels.db import database_sync_to_async

from apps.agents.tests.factories import HumanAgentFactory
from apps.agents.tests.test_agent_ws import TIMEOUT, memory_layer, open_socket, run, visitor_says  # noqa: F401
from apps.chats import services as chat_services
from apps.mentions.models import Mention
from tests.test_asyncapi import check

pytestmark = pytest.mark.django_db(transaction=True)


def write_note(widget, chat, agent, body):
    return chat_services.post_agent_message(
        widget=widget, chat=chat, agent=agent, data=chat_services.MessageInput(body=body, visibility="note")
    )


def test_the_mentioned_operator_alone_gets_the_frame(widget):
    anna = HumanAgentFactory(widget=widget, name="Anna")
    bob = HumanAgentFactory(widget=widget, name="Bob", surname="Stone")
    carol = HumanAgentFactory(widget=widget, name="Carol")
    chat = visitor_says(widget).chat

    async def scenario():
        bobs = [await open_socket(bob.user), await open_socket(bob.user)]  # two open consoles
        carols = await open_socket(carol.user)
        note = await database_sync_to_async(write_note)(widget, chat, anna, "@bob stone please call them")
        mention = await database_sync_to_async(Mention.objects.get)(message=note)
        for socket in bobs:
            frames = [await socket.receive_json_from(timeout=TIMEOUT) for _ in range(2)]
            (frame,) = [f for f in frames if f["event"] == "mention"]  # and the note's message frame
            assert frame == {
                "event": "mention",
                "mention_id": mention.pk,
                "chat_id": chat.pk,
                "message_id": note.pk,
                "by_agent_id": anna.pk,
                "by_name": "Anna",
                "text": "@bob stone please call them",
                "unread": 1,
            }
            check(frame)
        assert (await carols.receive_json_from(timeout=TIMEOUT))["event"] == "message"
        assert await carols.receive_nothing(timeout=0.3)
        for socket in [*bobs, carols]:
            await socket.disconnect()

    run(scenario)

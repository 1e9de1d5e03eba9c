"""The database work of one answer of the AI operator at work (bench/ai_reply.py measures its
latency): a fixed number of statements, whatever the chat's history holds."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ai import runtime
from apps.chats import services as chat_services
from apps.chats.models import Message

from .test_runtime import ANSWER, bot, presence, visitor_writes  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

# message + newer (one read), external operators, AI settings, assistant, operator, credentials,
# the claim, the history, the typing mark; under the chat's lock: the chat, claim + newer + switch
# (one read), the chat again and the message, the chat's last message, the outbox row, three rows of
# statistics facts (apps.stats' handler), the claim's outcome.
STATEMENTS_PER_ANSWER = 19


def statements(ctx) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]


@pytest.mark.parametrize("history", [1, 12])
def test_one_answer_costs_a_fixed_number_of_statements(bot, widget, history):
    first = visitor_writes(widget)
    assert runtime.answer(message_id=first.pk) == "answered"
    for i in range(history - 1):
        chat_services.post_client_message(
            widget=widget, contact=first.chat.contact, data=chat_services.MessageInput(body=f"And {i}?")
        )
    message = chat_services.post_client_message(
        widget=widget, contact=first.chat.contact, data=chat_services.MessageInput(body="And tea?")
    )
    with CaptureQueriesContext(connection) as ctx:
        assert runtime.answer(message_id=message.pk) == "answered"
    assert len(statements(ctx)) == STATEMENTS_PER_ANSWER, "\n".join(statements(ctx))
    assert Message.objects.filter(chat=message.chat, author_kind="ai").last().body == ANSWER

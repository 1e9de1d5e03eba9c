"""One tenant's slow model server on the shared `ai` worker, started from the Procfile's `ai` line (a
thread pool of 64) on the embedded default: widget A's model server answers 30 s late and 40 of its
visitors write at once; widget B's visitor still gets the AI's answer within seconds, because A holds
at most AI_WIDGET_SLOTS (24) of the worker's threads and its other tasks wait without one. A's
visitor who writes an escalation trigger is handed to people at once, with no provider call and no
slot; and once A's model server answers again, every one of A's waiting messages is answered.

Every wait polls the database (one `manage.py shell` per wait) or the fake's record; nothing sleeps
to let something happen.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from apps.ai import phrases
from tests.live import manage
from tests.llm_fake import FakeLLM, ca_path

pytestmark = [pytest.mark.embedded, pytest.mark.django_db]  # django_db: the plugin's autouse fixtures want it

SLOW_SECONDS = 30.0  # widget A's model server, before it recovers
VISITORS_OF_A = 40  # more than A's share
CAP = 24  # AI_WIDGET_SLOTS' default
HANDOVER = phrases.DEFAULTS["handover_offline"]["en"]  # nobody of A is online
PROMPT_LIMIT_SECONDS = 15.0  # an idle worker answers in about a second; behind A's tasks it took SLOW_SECONDS

SETUP = """
import json
from apps.ai.models import AiSettings
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from tests.support.factories import WidgetFactory
made = []
for name, key, base_url in {fakes!r}:
    widget = WidgetFactory(name=name)
    AiSettings.objects.update_or_create(widget=widget, defaults={{"enabled": True}})
    assistant = AssistantFactory(widget=widget, is_default=True, system_prompt="You sell tea.", escalation_triggers=["refund"])
    AiOperatorFactory(assistant=assistant)
    CredentialFactory(widget=widget, api_key=key, base_url=base_url)
    made.append(widget.pk)
print(json.dumps(made))
"""

# Visitors write: each a contact and a chat of their own. Prints the messages' ids.
WRITE = """
import json
from apps.chats import services as chat_services
from apps.chats.tests.factories import ContactFactory
from apps.core.models import Widget
widget = Widget.objects.get(pk={widget_id})
ids = []
for body in {bodies!r}:
    contact = ContactFactory(widget=widget)
    message = chat_services.post_client_message(widget=widget, contact=contact, data=chat_services.MessageInput(body=body))
    ids.append(message.pk)
print(json.dumps(ids))
"""

# Until every message has the AI's message in its chat: {message id: [seconds from the message to
# the AI's message, its text]}; what is missing after `timeout` is left out.
REPLIES = """
import json, time
from apps.chats.models import Message
ids = {ids!r}
deadline = time.monotonic() + {timeout}
while True:
    asked = {{m.pk: m for m in Message.objects.filter(pk__in=ids)}}
    found = {{}}
    for pk, message in asked.items():
        reply = Message.objects.filter(chat_id=message.chat_id, author_kind="ai").order_by("id").first()
        if reply is not None:
            found[pk] = [(reply.created_at - message.created_at).total_seconds(), reply.body]
    if len(found) == len(ids) or time.monotonic() > deadline:
        break
    time.sleep(0.2)
print(json.dumps(found))
"""


def _shell(live_var: Path, code: str):
    return json.loads(manage(live_var, "shell", "-c", code).strip().splitlines()[-1])


def _replies(live_var: Path, ids: list[int], timeout: float) -> dict[int, list]:
    return {int(pk): value for pk, value in _shell(live_var, REPLIES.format(ids=ids, timeout=timeout)).items()}


def _questions(fake: FakeLLM) -> set[str]:
    """The visitor messages the fake was asked to answer (a timed-out call asked again counts once)."""
    return {hit.json()["messages"][-1]["content"] for hit in fake.api_requests}


def _wait_for(predicate, timeout: float, what: str) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s")


def test_a_slow_tenant_holds_only_its_share_of_the_ai_worker(live_var, start_process):
    with FakeLLM("openai", text="A's answer.") as slow, FakeLLM("openai", text="B's answer.") as fast:
        # given widget A on a model server that answers 30 s late and widget B on a prompt one
        slow.delay = SLOW_SECONDS
        widget_a, widget_b = _shell(
            live_var,
            SETUP.format(fakes=[("A", slow.api_key, slow.base_url), ("B", fast.api_key, fast.base_url)]),
        )
        ai = start_process("ai", OUTBOUND_ALLOW_LOOPBACK="1", REQUESTS_CA_BUNDLE=ca_path())
        ai.wait_for_output("ready.", timeout=90)

        # when 20 of A's visitors write at once, and A's model server has the first of them
        bodies = [f"Where is my parcel, visitor {n}?" for n in range(VISITORS_OF_A)]
        a_ids = _shell(live_var, WRITE.format(widget_id=widget_a, bodies=bodies))
        _wait_for(lambda: len(_questions(slow)) >= CAP, 90, "A's model server was not asked")

        # then B's visitor gets B's answer within seconds, while A's model server holds its share only
        [b_id] = _shell(live_var, WRITE.format(widget_id=widget_b, bodies=["How long is delivery?"]))
        b_reply = _replies(live_var, [b_id], timeout=PROMPT_LIMIT_SECONDS * 3)
        print(f"B's answer after {b_reply.get(b_id)}; A's provider calls in flight: {len(slow.api_requests)}")
        assert b_id in b_reply, "B's visitor got no answer while A's model server was slow"
        seconds, text = b_reply[b_id]
        assert (text, seconds < PROMPT_LIMIT_SECONDS) == ("B's answer.", True), b_reply
        assert len(_questions(slow)) <= CAP, _questions(slow)

        # and A's visitor who writes an escalation trigger is handed to people at once, no provider asked
        [trigger_id] = _shell(live_var, WRITE.format(widget_id=widget_a, bodies=["I want a refund now"]))
        handed = _replies(live_var, [trigger_id], timeout=PROMPT_LIMIT_SECONDS * 3)
        print(f"A's hand-over after {handed.get(trigger_id)}")
        assert trigger_id in handed and handed[trigger_id][0] < PROMPT_LIMIT_SECONDS, handed
        assert handed[trigger_id][1] == HANDOVER
        assert "I want a refund now" not in _questions(slow)

        # when A's model server answers promptly again, every one of A's waiting messages is answered:
        # each was asked of the model server in its turn (the calls in flight while it was slow may
        # have run out of their deadline meanwhile, and those chats were handed to people)
        slow.delay = 0.0
        answered = _replies(live_var, a_ids, timeout=SLOW_SECONDS + 120)
        outcomes = Counter(text for _seconds, text in answered.values())
        print(f"A's {len(a_ids)} messages: {dict(outcomes)}")
        assert sorted(answered) == sorted(a_ids), f"{len(answered)} of {len(a_ids)} answered"
        assert set(bodies) <= _questions(slow)
        assert set(outcomes) <= {"A's answer.", HANDOVER} and outcomes["A's answer."] >= VISITORS_OF_A - CAP, outcomes
        assert ai.alive()

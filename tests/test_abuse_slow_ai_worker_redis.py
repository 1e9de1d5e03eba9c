"""The shared `ai` worker with a slow tenant, on PostgreSQL + Redis: the Procfile's `ai` line (64
threads) on the test database and the broker on Redis; widget A's model server answers 30 s late for
40 of its visitors and widget B's answer still arrives within seconds (the embedded default's run of
the same is tests/test_abuse_slow_ai_worker.py)."""

from __future__ import annotations

import pytest

from tests.llm_fake import FakeLLM, ca_path
from tests.test_abuse_slow_ai_worker import (
    CAP,
    PROMPT_LIMIT_SECONDS,
    SLOW_SECONDS,
    VISITORS_OF_A,
    _questions,
    _wait_for,
)


@pytest.fixture
def ai_worker_on_redis(django_db_setup, tmp_path):
    """The Procfile's `ai` line on the test database and Redis (the queue `ai`, emptied before and after;
    the project's settings, so that a waiting task sends itself again through the broker)."""
    import os
    import signal
    import subprocess

    from celery import current_app
    from django.conf import settings

    from tests.live import VENV_BIN, procfile
    from tests.support.processes import ROOT, wait_until_ready, worker_env

    if not settings.USING_POSTGRES or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis")
    with current_app.connection_for_write() as conn:
        conn.default_channel.queue_purge("ai")
    log = tmp_path / "ai.log"
    env = worker_env(ca_bundle=ca_path())
    env.update(DJANGO_SETTINGS_MODULE="config.settings", PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
    with log.open("w") as out:
        process = subprocess.Popen(
            ["sh", "-c", f"exec {procfile('ai')}"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    before = current_app.conf.task_always_eager
    try:
        wait_until_ready(log, process, timeout=90.0)
        current_app.conf.task_always_eager = False
        yield process
    finally:
        current_app.conf.task_always_eager = before
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        with current_app.connection_for_write() as conn:
            conn.default_channel.queue_purge("ai")


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_on_postgres_and_redis_a_slow_tenant_holds_only_its_share(ai_worker_on_redis, monkeypatch, settings):
    from apps.ai.models import AiSettings
    from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
    from apps.chats import services as chat_services
    from apps.chats.models import Message
    from apps.chats.tests.factories import ContactFactory
    from tests.support.factories import WidgetFactory

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with FakeLLM("openai", text="A's answer.") as slow, FakeLLM("openai", text="B's answer.") as fast:
        slow.delay = SLOW_SECONDS
        widgets = []
        for fake in (slow, fast):
            widget = WidgetFactory()
            AiSettings.objects.create(widget=widget, enabled=True)
            assistant = AssistantFactory(widget=widget, is_default=True, escalation_triggers=["refund"])
            AiOperatorFactory(assistant=assistant)
            CredentialFactory(widget=widget, api_key=fake.api_key, base_url=fake.base_url)
            widgets.append(widget)
        widget_a, widget_b = widgets

        def write(widget, body):
            return chat_services.post_client_message(
                widget=widget, contact=ContactFactory(widget=widget), data=chat_services.MessageInput(body=body)
            )

        def reply_to(message):
            return Message.objects.filter(chat_id=message.chat_id, author_kind="ai").order_by("id").first()

        # when 20 of A's visitors write at once, and A's model server has the first of them
        a_messages = [write(widget_a, f"Where is my parcel, visitor {n}?") for n in range(VISITORS_OF_A)]
        _wait_for(lambda: len(_questions(slow)) >= CAP, 90, "A's model server was not asked")

        # then B's visitor gets B's answer within seconds, and A holds its share only
        b_message = write(widget_b, "How long is delivery?")
        _wait_for(lambda: reply_to(b_message) is not None, PROMPT_LIMIT_SECONDS * 3, "B's answer")
        b_reply = reply_to(b_message)
        seconds = (b_reply.created_at - b_message.created_at).total_seconds()
        print(f"B's answer after {seconds:.2f} s; A's questions asked: {len(_questions(slow))}")
        assert (b_reply.body, seconds < PROMPT_LIMIT_SECONDS) == ("B's answer.", True)
        assert len(_questions(slow)) <= CAP

        # when A's model server answers promptly again, every one of A's messages gets the AI's message
        slow.delay = 0.0
        _wait_for(lambda: all(reply_to(m) for m in a_messages), SLOW_SECONDS + 120, "A's answers")
        assert {m.body for m in a_messages} <= _questions(slow)
        assert ai_worker_on_redis.poll() is None

"""Two weeks of the demo widget's chats for the reports page's browser test, driven through the chat
services on a moved clock, so the statistics rollups are written as in production.

Run in the server's VAR_DIR: `manage.py shell -c "from tests.browser.report_seed import seed; seed(GUID, EMAIL)"`.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone


def seed(guid: str, operator_email: str, *, days: int = 14) -> None:
    from apps.agents.models import Agent
    from apps.chats import services
    from apps.chats.models import Chat, ChatTransfer, Contact, Message, Rating
    from apps.core.models import Widget
    from apps.routing import sla

    widget = Widget.objects.get(button_guid=guid)
    owner = Agent.objects.get(widget=widget, role="owner", type=Agent.Type.HUMAN)
    operator = Agent.objects.get(widget=widget, user__email=operator_email)
    real_now = timezone.now
    clock = {"now": real_now()}
    fields = [model._meta.get_field("created_at") for model in (Chat, Contact, Message, Rating, ChatTransfer)] + [
        Chat._meta.get_field("updated_at")
    ]
    saved = [(field, field.default) for field in fields]
    timezone.now = lambda: clock["now"]
    for field in fields:
        field.default = timezone.now
        field.__dict__.pop("_get_default", None)
    try:
        # Every moment stays in the past: a day's chats are at most five hours apart.
        start = real_now() - timedelta(days=days - 1, hours=6)
        clock["now"] = start - timedelta(hours=1)
        # A first-response target of three minutes: the slower answers below breach it.
        sla.create_policy(widget=widget, data={"name": "Three minutes", "first_response_seconds": 180})
        n = 0
        for day in range(days):
            for k in range(2 + (day * 5) % 7):
                n += 1
                clock["now"] = start + timedelta(days=day, minutes=37 * k)
                channel = ("widget", "widget", "tg", "vk")[n % 4]
                contact = Contact.objects.create(widget=widget, name=f"Visitor {n}")
                message = services.post_client_message(
                    widget=widget, contact=contact, data=services.MessageInput(body="Hello"), channel=channel
                )
                chat = Chat.objects.get(pk=message.chat_id)
                if n % 5 == 4:
                    continue  # nobody answers: a missed chat
                agent = operator if n % 2 else owner
                clock["now"] += timedelta(seconds=20 + 41 * (n % 9))
                services.post_agent_message(
                    widget=widget, chat=chat, agent=agent, data=services.MessageInput(body="Hi, how can I help?")
                )
                if n % 3 != 2:
                    clock["now"] += timedelta(minutes=3)
                    services.rate_chat(widget=widget, chat=chat, value=(5, 4, 5, 3, 5, 2, 4, 1)[n % 8])
                if n % 4 != 1:
                    clock["now"] += timedelta(minutes=4 + 7 * (n % 6))
                    services.close_chat(widget=widget, chat=chat)
        # The unanswered chats' clocks ran out long ago: the beat job's breach, run once.
        sla.breach_due(now=real_now())
    finally:
        timezone.now = real_now
        for field, default in saved:
            field.default = default
            field.__dict__.pop("_get_default", None)

import itertools

import pytest
from django.db import transaction

from apps.automation import runtime, selectors, services
from apps.automation.models import AutomationEvaluation, RuleSet
from apps.chats.models import Chat
from apps.chats.tests.factories import ChatFactory, ContactFactory
from apps.core import events

_keys = itertools.count()


@pytest.fixture(autouse=True)
def _fresh_compiled_rules():
    runtime.clear_cache()
    yield
    runtime.clear_cache()


@pytest.fixture
def idem():
    def make() -> dict:
        return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"automation-{next(_keys)}"}

    return make


@pytest.fixture
def chat(widget) -> Chat:
    return ChatFactory(contact=ContactFactory(widget=widget, locale="de", attributes={"plan": "vip", "seats": 5}))


@pytest.fixture
def rule(widget):
    """Make a rule through the service (validated like the API)."""

    def make(*, event="chat.created", conditions=(), actions=None, name="Rule", enabled=True):
        return services.create_rule(
            widget=widget,
            name=name,
            event=event,
            conditions=list(conditions),
            actions=list(actions or [{"type": "add_note", "text": "rule ran"}]),
            enabled=enabled,
        )

    return make


@pytest.fixture
def fire(django_capture_on_commit_callbacks):
    """Emit one event by hand in a transaction and run what its commit hands off (the rules' task
    runs eagerly under the test settings)."""

    def emit(widget, type, **data):
        with django_capture_on_commit_callbacks(execute=True):
            with transaction.atomic():
                events.emit(widget, type, **data)

    return emit


def event_data(type: str, chat) -> dict:
    """The catalogue's fields of `type` about `chat`."""
    return {
        "chat.created": {"chat_id": chat.pk, "client_id": chat.contact.guid, "source": "visitor"},
        "message.created": {
            "chat_id": chat.pk,
            "message_id": 0,
            "client_id": chat.contact.guid,
            "author_type": "USER",
            "source": "visitor",
        },
        "chat.closed": {"chat_id": chat.pk, "reason": "agent"},
        "chat.assigned": {"chat_id": chat.pk, "agent_id": None, "by": "routing"},
        "sla.breached": {"chat_id": chat.pk, "policy_id": 1, "kind": "first_response"},
        "offline_message.created": {
            "chat_id": chat.pk,
            "client_id": chat.contact.guid,
            "message_id": 0,
            "name": "",
            "email": "",
            "phone": "",
        },
    }[type]


def runs(rule) -> list[tuple[str, str]]:
    """The rule's runs as the API reads them, oldest first: (outcome, detail)."""
    return [(run.outcome, run.detail) for run in reversed(selectors.list_runs(widget=rule.widget, rule=rule))]


def log_run(rule, *, outcome="not_matched", detail="", chat_id=None) -> AutomationEvaluation:
    """One evaluation of the rule's event at its widget's current version, as the runtime logs it."""
    return AutomationEvaluation.objects.create(
        widget_id=rule.widget_id,
        version=RuleSet.objects.get(widget_id=rule.widget_id).version,
        event=rule.event,
        chat_id=chat_id,
        results={} if outcome == "not_matched" else {str(rule.pk): [outcome, detail]},
    )

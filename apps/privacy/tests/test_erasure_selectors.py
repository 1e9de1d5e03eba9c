"""Every selector that reads contacts, chats or messages leaves out a contact under erasure.

The walk imports every `apps.*.selectors` module (and every `apps.*.<part>_selectors`) and finds
each public function that reads a person's rows (its source, or a private helper it calls, names
Chat, Contact, Message, Rating, Ticket or ChatFacts). Each is either called here for both people of the world (apps/privacy/tests/
test_erasure_contract.py) or listed in EXEMPT with the reason it cannot leak one. A new selector
fails the walk until it is one or the other.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

import apps
from apps.agents.tests.factories import HumanAgentFactory
from apps.ai import selectors as ai
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory
from apps.canned import selectors as canned
from apps.chats import selectors as chats
from apps.chats.models import Chat, Contact, Message, Rating
from apps.chats.tests.factories import MessageFactory
from apps.console import selectors as console
from apps.core.models import File
from apps.erasure.selectors import LiveQuerySet
from apps.learning import selectors as learning
from apps.stats.models import ChatFacts
from apps.support import selectors as support
from apps.support.models import Ticket

from .test_erasure_contract import World, world  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db

_READS_A_PERSON = re.compile(r"\b(Chat|Contact|Message|Rating|Ticket|ChatFacts)\b")

TAKES_A_LIVE_PARENT = "reads under a chat, contact or ticket its caller already read through .live()"

# selector -> why it needs no erasure rule of its own
EXEMPT: dict[str, str] = {
    "apps.ai.selectors.held_claim": "the claim of a message its caller read through .live(), and whether a newer one exists",
    "apps.ai.selectors.newer_visitor_messages": "a subquery of messages after one its caller read through .live()",
    "apps.routing.selectors.chat_routing": TAKES_A_LIVE_PARENT,
    "apps.routing.selectors.queue_position": TAKES_A_LIVE_PARENT,
    "apps.routing.selectors.routing_payload": TAKES_A_LIVE_PARENT,
    "apps.routing.selectors.sla_payload": TAKES_A_LIVE_PARENT,
    "apps.canned.selectors.render_for_chat": TAKES_A_LIVE_PARENT,
    "apps.canned.selectors.variable_values": TAKES_A_LIVE_PARENT,
    "apps.canned.selectors.render_text_for_chat": TAKES_A_LIVE_PARENT,
    "apps.chats.selectors.get_chat_label_names": TAKES_A_LIVE_PARENT,
    "apps.chats.selectors.prefetch_chat_labels": "labels of the chats its caller read through .live()",
    "apps.console.context_selectors.chat_labels": TAKES_A_LIVE_PARENT,
    "apps.channels.selectors.find_legacy_chat_channel": "a channel by its secret: no row of a person",
    "apps.chats.selectors.chat_payload": "serializes the row it is given",
    "apps.chats.selectors.message_payload": "serializes the row it is given",
    "apps.chats.selectors.filter_chats": "refines the queryset its caller gives (a view's live tenant queryset)",
    "apps.chats.selectors.filter_messages": TAKES_A_LIVE_PARENT,
    "apps.chats.selectors.list_contact_chats": TAKES_A_LIVE_PARENT,
    "apps.chats.selectors.match_contacts": "refines the queryset its caller gives (a live tenant queryset)",
    "apps.chats.selectors.contact_identity": TAKES_A_LIVE_PARENT,
    "apps.chats.selectors.get_verified_contact": "refines the queryset its caller gives (a live tenant queryset)",
    "apps.chats.selectors.get_previous_message_at": "the time of a message before one its caller just wrote into a live room",
    "apps.chats.selectors.visible_messages": "the search subquery of filter_chats, whose outer chats are live",
    # The outbox's payload builders: an event that committed before the erasure was accepted is still
    # delivered, and the worker redacts the delivery log (apps.privacy.services.erase_contact).
    "apps.chats.selectors.get_chat": "webhook payloads of events committed before the erasure",
    "apps.chats.selectors.get_contact_by_guid": "webhook payloads of events committed before the erasure",
    "apps.chats.selectors.get_message": "webhook payloads of events committed before the erasure",
    "apps.compat.selectors.serves": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.can_suggest": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.latest_messages": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.messages_after": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.messages_before": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.render_canned": TAKES_A_LIVE_PARENT,
    "apps.console.selectors.newest_unseen_client_message": TAKES_A_LIVE_PARENT,
    "apps.console.context_selectors.chat_context": TAKES_A_LIVE_PARENT,
    "apps.console.context_selectors.earlier_chats": TAKES_A_LIVE_PARENT,
    "apps.console.context_selectors.notes": TAKES_A_LIVE_PARENT,
    "apps.console.context_selectors.routing": TAKES_A_LIVE_PARENT,
    "apps.console.context_selectors.visitor_details": TAKES_A_LIVE_PARENT,
    # counts, no row: like the statistics rollups, which an erasure keeps (they hold no personal data)
    "apps.learning.selectors.count_evidence": "counts only: no row of a person leaves it",
    "apps.privacy.selectors.contact_export_payload": TAKES_A_LIVE_PARENT,
    "apps.privacy.selectors.export_contact": TAKES_A_LIVE_PARENT,
    "apps.privacy.selectors.erasure_counts": TAKES_A_LIVE_PARENT,
    "apps.support.selectors.customer_addresses": TAKES_A_LIVE_PARENT,
    "apps.support.selectors.get_read_grant": TAKES_A_LIVE_PARENT,
    "apps.support.selectors.list_messages": TAKES_A_LIVE_PARENT,
    "apps.support.selectors.ticket_transcript": TAKES_A_LIVE_PARENT,
    "apps.stats.selectors.chat_facts": "the snapshot of a chat its writer holds locked, to update the rollups",
}


# --- the calls ------------------------------------------------------------------------------------


def _chat_ids(rows) -> set[int]:
    return {row.pk for row in rows if row is not None}


def _one_chat_each(find: Callable[[Chat], Chat | None]) -> Callable[[World], None]:
    def check(w: World) -> None:
        assert find(w.kept.chats[0]) is not None
        assert find(w.gone.chats[0]) is None

    return check


def _chat_list(read: Callable[[World], object]) -> Callable[[World], None]:
    def check(w: World) -> None:
        found = _chat_ids(read(w))
        assert found & {c.pk for c in w.kept.chats}
        assert not found & {c.pk for c in w.gone.chats}

    return check


def _operator(w: World):
    return HumanAgentFactory(widget=w.widget)


def _files(w: World) -> None:
    shown = set(File.objects.filter(chats.not_erasing_file()).values_list("pk", flat=True))
    assert {f.pk for f in w.kept.files} <= shown
    assert not {f.pk for f in w.gone.files} & shown


def _one_contact_each(w: World) -> None:
    assert chats.get_live_contact(widget=w.widget, guid=w.kept.contact.guid) is not None
    assert chats.get_live_contact(widget=w.widget, guid=w.gone.contact.guid) is None


def _contact_list(w: World) -> None:
    found = {contact.pk for contact in chats.list_contacts(widget=w.widget, limit=100)}
    assert w.kept.contact.pk in found and w.gone.contact.pk not in found


def _merge_candidates(w: World) -> None:
    searcher = Contact.objects.create(widget=w.widget, name="Searcher")
    found = {contact.pk for contact in chats.find_merge_candidates(widget=w.widget, exclude=searcher, query="Person")}
    assert w.kept.contact.pk in found and w.gone.contact.pk not in found


def _view_counts(w: World) -> None:
    Chat.objects.filter(pk__in=[c.pk for c in (*w.kept.chats, *w.gone.chats)]).update(status=Chat.Status.ACTIVE)
    open_chats = Chat.objects.filter(widget=w.widget, status=Chat.Status.ACTIVE, last_message_at__isnull=False)
    assert open_chats.filter(contact=w.gone.contact).exists()  # the erased person has open chats to count
    counts = console.view_counts(agent=_operator(w))
    assert counts["all"] == open_chats.exclude(contact=w.gone.contact).count() > 0


def _evidence(w: World) -> None:
    assistant = AssistantFactory(widget=w.widget)
    operator = AiOperatorFactory(assistant=assistant)
    now = timezone.now()
    for person in (w.kept, w.gone):
        chat = person.chats[0]
        MessageFactory(chat=chat, author_kind=Message.Author.AI, agent=operator, body=f"ai answer {person.contact.pk}")
        Chat.objects.filter(pk=chat.pk).update(handling=Chat.Handling.AI_TO_HUMAN, handled_at=now)
        Rating.objects.create(widget=w.widget, chat=chat, value=1, comment=f"bad {person.contact.pk}")
    excerpts = learning.evidence_excerpts(w.widget, assistant, now - timedelta(days=1), now + timedelta(days=1))
    assert len(excerpts["chats"]) == 1  # the kept person's chat, escalated and rated
    found = json.dumps(excerpts)
    assert f"ai answer {w.kept.contact.pk}" in found and f"bad {w.kept.contact.pk}" in found
    assert f"ai answer {w.gone.contact.pk}" not in found and f"bad {w.gone.contact.pk}" not in found
    assert not [word for word in w.gone.words if word in found]


def _answerable_message(w: World) -> None:
    for person, found in ((w.kept, True), (w.gone, False)):
        message = MessageFactory(chat=person.chats[0], author_kind=Message.Author.CLIENT)
        assert (ai.answerable_message(message.pk) is not None) is found


CALLED: dict[str, Callable[[World], None]] = {
    "apps.ai.selectors.answerable_message": _answerable_message,
    "apps.canned.selectors.get_chat": _one_chat_each(lambda chat: canned.get_chat(widget=chat.widget, chat_id=chat.pk)),
    "apps.chats.selectors.not_erasing_file": _files,
    "apps.chats.selectors.get_room": _one_chat_each(
        lambda chat: chats.get_room(widget=chat.widget, contact=chat.contact, channel=chat.channel)
    ),
    "apps.chats.selectors.locked_chat": _one_chat_each(
        lambda chat: chats.locked_chat(widget_id=chat.widget_id, chat_id=chat.pk, related=("contact",))
    ),
    "apps.chats.selectors.locked_room": _one_chat_each(
        lambda chat: chats.locked_room(widget_id=chat.widget_id, contact_id=chat.contact_id, channel=chat.channel)
    ),
    "apps.chats.selectors.list_chats": _chat_list(
        lambda w: [
            Chat(pk=row["id"])
            for search in (None, "secret")
            for row in chats.list_chats(widget=w.widget, limit=100, q=search)
        ]
    ),
    "apps.chats.selectors.get_live_contact": _one_contact_each,
    "apps.chats.selectors.list_contacts": _contact_list,
    "apps.chats.selectors.find_merge_candidates": _merge_candidates,
    "apps.console.selectors.get_chat": _one_chat_each(
        lambda chat: console.get_chat(agent=HumanAgentFactory(widget=chat.widget), chat_id=chat.pk)
    ),
    "apps.console.selectors.list_chats": _chat_list(
        lambda w: [
            *console.list_chats(agent=_operator(w), filters=console.ChatFilters()),
            *console.list_chats(agent=_operator(w), filters=console.ChatFilters(q="secret")),
        ]
    ),
    "apps.console.selectors.view_counts": _view_counts,
    "apps.learning.selectors.evidence_excerpts": _evidence,
    "apps.support.selectors.get_support_chat": _one_chat_each(
        lambda chat: support.get_support_chat(widget=chat.widget, chat_id=chat.pk)
    ),
    "apps.support.selectors.list_support_chats": _chat_list(
        lambda w: support.list_support_chats(
            widget=w.widget, updated_since=timezone.now() - timedelta(days=1), now=timezone.now(), min_idle_sec=0
        )
    ),
    "apps.support.selectors.support_chats": _chat_list(lambda w: support.support_chats(w.widget)),
}


# --- the walk -------------------------------------------------------------------------------------


def _selector_modules():
    """Each app's `selectors` and its other reading modules (`<part>_selectors`)."""
    for info in pkgutil.iter_modules(apps.__path__):
        try:
            package = importlib.import_module(f"apps.{info.name}")
        except ModuleNotFoundError:
            continue
        for module in pkgutil.iter_modules(package.__path__):
            if module.name == "selectors" or module.name.endswith("_selectors"):
                yield importlib.import_module(f"apps.{info.name}.{module.name}")


def _reads_a_person(module, function) -> bool:
    """The function's source names a person's model, or a private helper of its module it calls does."""
    source = inspect.getsource(function)
    if _READS_A_PERSON.search(source):
        return True
    for node in ast.walk(ast.parse(source.lstrip())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("_"):
            helper = getattr(module, node.func.id, None)
            if inspect.isfunction(helper) and _READS_A_PERSON.search(inspect.getsource(helper)):
                return True
    return False


def _person_readers() -> set[str]:
    found = set()
    for module in _selector_modules():
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or function.__module__ != module.__name__:
                continue
            if _reads_a_person(module, function):
                found.add(f"{module.__name__}.{name}")
    return found


def test_every_selector_reading_a_person_is_called_here_or_exempt_with_a_reason():
    found = _person_readers()
    assert not set(CALLED) & set(EXEMPT)
    assert found == set(CALLED) | set(EXEMPT), {
        "new: call it in CALLED or give a reason in EXEMPT": sorted(found - set(CALLED) - set(EXEMPT)),
        "listed but gone": sorted((set(CALLED) | set(EXEMPT)) - found),
    }


@pytest.mark.parametrize("name", sorted(CALLED))
def test_the_selector_leaves_out_the_contact_under_erasure(world, name):  # noqa: F811
    CALLED[name](world)


# --- the models' querysets ------------------------------------------------------------------------

LIVE_MODELS = [Contact, Chat, Message, Rating, Ticket, ChatFacts]


@pytest.mark.parametrize("model", LIVE_MODELS, ids=lambda m: m.__name__)
def test_live_leaves_out_every_row_of_the_contact_under_erasure(world, model):  # noqa: F811
    assert isinstance(model.objects.all(), LiveQuerySet)
    path = model.objects.all().contact_path
    contacts = set(model.objects.live().values_list(path, flat=True))
    everything = set(model.objects.values_list(path, flat=True))
    assert world.kept.contact.pk in contacts and world.gone.contact.pk in everything
    assert world.gone.contact.pk not in contacts


def test_the_rule_is_applied_through_live_only():
    """`not_erasing()` is the expression behind `.live()`: a read that names it by hand is a read
    the walk above cannot see."""
    root = Path(apps.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        relative = path.relative_to(root)
        if relative.parts[0] == "erasure" or "tests" in relative.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node, "attr", None) or getattr(node, "id", None)
            if name == "not_erasing" or (isinstance(node, ast.alias) and node.name == "not_erasing"):
                offenders.append(f"{relative}:{node.lineno}")
    assert offenders == []

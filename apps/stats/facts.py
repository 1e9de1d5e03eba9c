"""Statistics facts of conversations: what each change of a chat adds to the daily rollups of
apps.stats, decided here and stored by apps.stats.services.

The chat services emit one event per change (room created, accepted, attributed, transferred,
message stored, rated); the in-transaction handlers at the end of this module (registered by
StatsConfig.ready()) run inside that transaction with the chat row locked, so the figures change in
the same commit as the chat. `rebuild_widget_facts` recomputes every fact
of a widget from the base tables (existing data, repairs), with the same definitions:

- A chat (room) counts on the Europe/Moscow day it was created, with its attribution as it is now:
  `handling`, `accepted_by` and its type, `handled_by` and its type, and its routing owner.
  Escalations count by what the chat went through (`Chat.went_ai_to_human`, `went_human_to_ai`,
  set when `handling` moves): a chat that went AI to a person and back counts in both. A chat
  answered the day after it was opened leaves `chats_missed` of its creation day.
- A message counts on its own Moscow day when it is public and written by the visitor, a person or
  the AI operator; rating requests (system), operator notes, e-mails and internal messages do not.
  An operator's message also counts for that agent.
- Response time of a chat: first visible operator reply minus room creation, in whole milliseconds
  (so a returning visitor's room, created long before the reply, inflates it).
- First response of a chat: first visible operator reply minus the visitor message that opened the
  conversation it answers. A visitor message opens a conversation when it is the room's first
  message or comes CONVERSATION_GAP or more after the previous message of the room (by (created_at,
  id)); a room whose first reply came before any visitor message has none.
- A rating counts on its own day (re-rating changes the value and the agent, not the day), for the
  agent handling the chat at rating time.
- A transfer counts on its own day: out for the previous owner, in for the new one.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime, timedelta
from types import SimpleNamespace

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncDate

from apps.chats import selectors as chat_selectors
from apps.chats.models import Chat, ChatTransfer, Message, Rating
from apps.core import events
from apps.core.timeparse import business_tz

from . import report_facts, routing_facts
from . import selectors as stats_selectors
from . import services as stats
from .models import ChatFacts

# The idle expiry of apps.chats.services: a room quiet this long has been closed by the sweep.
CONVERSATION_GAP = timedelta(minutes=7)
COUNTED_AUTHORS = (Message.Author.CLIENT, Message.Author.AGENT, Message.Author.AI)
OPERATOR_AUTHORS = (Message.Author.AGENT, Message.Author.AI)
_SNAPSHOT = (
    "created_at",
    "day",
    "report_day",
    "channel",
    "is_internal",
    "handling",
    "went_ai_to_human",
    "went_human_to_ai",
    "accepted_type",
    "handled_type",
    "owner_agent_id",
    "accepted_agent_id",
    "handled_agent_id",
    "first_reply_at",
    "conversation_started_at",
    "first_response_ms",
    "contact_id",
    "contact_guid",
    "department_id",
    "closed_at",
)
_CHAT_FIELDS = (
    "id",
    "widget_id",
    "created_at",
    "channel",
    "is_internal",
    "handling",
    "went_ai_to_human",
    "went_human_to_ai",
    "accepted_by_type",
    "handled_by_type",
    "agent_id",
    "accepted_by_id",
    "handled_by_id",
    "first_agent_reply_at",
    "contact_id",
    "contact__guid",
    "department_id",
    "closed_at",
)


def moscow_day(moment: datetime) -> date:
    return moment.astimezone(business_tz()).date()


def whole_ms(span: timedelta) -> int:
    """Whole milliseconds, rounded down (the unit of every response-time sum)."""
    return span // timedelta(milliseconds=1)


def is_counted(message: Message) -> bool:
    return message.visibility == Message.Visibility.PUBLIC and message.author_kind in COUNTED_AUTHORS


# --- one chat's contribution --------------------------------------------------------------------------


def _contribute(delta: stats.Delta, facts: ChatFacts, sign: int) -> None:
    """Add (sign 1) or take back (sign -1) what one chat's snapshot puts into the rollups."""
    handling = facts.handling
    response_ms = whole_ms(facts.first_reply_at - facts.created_at) if facts.first_reply_at else None
    delta.add_widget(
        (facts.day, facts.channel, facts.is_internal),
        {
            "chats_total": 1,
            "chats_missed": handling == Chat.Handling.MISSED,
            "chats_accepted_ai": facts.accepted_type == Chat.OperatorType.AI,
            "chats_accepted_human": facts.accepted_type == Chat.OperatorType.HUMAN,
            "chats_handled_ai": facts.handled_type == Chat.OperatorType.AI,
            "chats_handled_human": facts.handled_type == Chat.OperatorType.HUMAN,
            "chats_ai_to_human": facts.went_ai_to_human,
            "chats_human_to_ai": facts.went_human_to_ai,
            "response_ms_sum": response_ms or 0,
            "response_count": response_ms is not None,
            "first_response_ms_sum": facts.first_response_ms or 0,
            "first_response_count": facts.first_response_ms is not None,
        },
        sign,
    )
    if facts.owner_agent_id is not None:
        delta.add_agent(
            (facts.owner_agent_id, facts.day),
            {
                "chats_total": 1,
                "chats_missed": handling == Chat.Handling.MISSED,
                "response_ms_sum": response_ms or 0,
                "response_count": response_ms is not None,
            },
            sign,
        )
    if facts.accepted_agent_id is not None:
        delta.add_agent((facts.accepted_agent_id, facts.day), {"chats_accepted": 1}, sign)
    if facts.handled_agent_id is not None:
        delta.add_agent((facts.handled_agent_id, facts.day), {"chats_handled": 1}, sign)
    if facts.report_day is not None:
        report_facts.contribute(delta, facts, sign)


def _observe(facts: ChatFacts, chat, zone) -> None:
    """Copy the chat's attribution into its snapshot (`zone`: the widget's report time zone). The
    first reply fixes the first response, measured from the conversation start recorded so far."""
    facts.created_at = chat.created_at
    facts.day = moscow_day(chat.created_at)
    facts.report_day = chat.created_at.astimezone(zone).date()
    facts.channel = chat.channel
    facts.is_internal = chat.is_internal
    facts.handling = chat.handling
    facts.went_ai_to_human = chat.went_ai_to_human
    facts.went_human_to_ai = chat.went_human_to_ai
    facts.accepted_type = chat.accepted_by_type
    facts.handled_type = chat.handled_by_type
    facts.owner_agent_id = chat.agent_id
    facts.accepted_agent_id = chat.accepted_by_id
    facts.handled_agent_id = chat.handled_by_id
    if facts.contact_id != chat.contact_id or not facts.contact_guid:
        facts.contact_guid = _contact_guid(chat)
    facts.contact_id = chat.contact_id
    facts.department_id = chat.department_id
    facts.closed_at = chat.closed_at
    reply = chat.first_agent_reply_at
    if reply is not None and facts.first_reply_at is None:
        start = facts.conversation_started_at
        facts.first_response_ms = whole_ms(reply - start) if start is not None and start <= reply else None
    facts.first_reply_at = reply


def _contact_guid(chat) -> str:
    """The guid of the chat's contact: read with the chat's columns by the rebuild, else the chat's
    contact (loaded with it where the chat was made)."""
    known = getattr(chat, "contact__guid", None)
    return known if known is not None else chat.contact.guid


def _state(facts: ChatFacts) -> tuple:
    return tuple(getattr(facts, name) for name in _SNAPSHOT)


def _sync(delta: stats.Delta, chat: Chat, *, conversation_start: datetime | None = None) -> None:
    """Bring the chat's snapshot up to date and put the difference into `delta`. Idempotent: a
    second call finds nothing to change. A chat without a snapshot (made before facts existed)
    enters with its whole contribution."""
    facts = stats_selectors.chat_facts(chat_id=chat.pk)
    created = facts is None
    if created:
        facts = ChatFacts(chat_id=chat.pk, widget_id=chat.widget_id)
        before = None
    else:
        before = _state(facts)
        _contribute(delta, facts, -1)
    if conversation_start is not None:
        facts.conversation_started_at = conversation_start
    _observe(facts, chat, delta.zone())
    _contribute(delta, facts, 1)
    if created or _state(facts) != before:
        stats.save_chat_facts(facts, created=created, fields=_SNAPSHOT)


def _count_message(delta: stats.Delta, chat: Chat, message: Message) -> None:
    if not is_counted(message):
        return
    day = moscow_day(message.created_at)
    delta.add_widget((day, chat.channel, chat.is_internal), {"messages_total": 1})
    if message.author_kind in OPERATOR_AUTHORS and message.agent_id is not None:
        delta.add_agent((message.agent_id, day), {"messages_total": 1})


def _count_rating(delta: stats.Delta, chat, *, at: datetime, value: int, agent_id: int | None, sign: int) -> None:
    day = moscow_day(at)
    delta.add_widget((day, chat.channel, chat.is_internal), {"rating_sum": value, "rating_count": 1}, sign)
    if agent_id is not None:
        delta.add_agent((agent_id, day), {f"rating_{value}": 1}, sign)
    where = (at.astimezone(delta.zone()).date(), chat.channel, chat.is_internal)
    delta.add_report((*where, 0, chat.department_id or 0), {f"rating_{value}": 1}, sign)
    if agent_id is not None:
        delta.add_report((*where, agent_id, 0), {f"rating_{value}": 1}, sign)


def _count_transfer(delta: stats.Delta, *, at: datetime, from_agent_id: int | None, to_agent_id: int | None) -> None:
    day = moscow_day(at)
    if from_agent_id is not None:
        delta.add_agent((from_agent_id, day), {"transferred_out": 1})
    if to_agent_id is not None:
        delta.add_agent((to_agent_id, day), {"transferred_in": 1})


def _opens_conversation(message: Message) -> bool:
    """The visitor message is the room's first or follows the previous one by CONVERSATION_GAP+."""
    previous = chat_selectors.get_previous_message_at(chat_id=message.chat_id, before=message)
    return previous is None or message.created_at - previous >= CONVERSATION_GAP


# --- one chat's changes (inside the change's transaction, chat row locked) ----------------------------


def _chat_delta(chat: Chat) -> stats.Delta:
    """An empty delta of `chat`'s widget, written to the chat's own shard of the rollups."""
    return stats.Delta(chat.widget_id, stats.shard_of(chat.pk))


def chat_created(*, chat: Chat) -> None:
    """A room was made: it counts on its creation day, as missed until someone answers."""
    chat_changed(chat=chat)


def chat_changed(*, chat: Chat) -> None:
    """The chat's attribution may have changed (answered, accepted, owner, handler)."""
    delta = _chat_delta(chat)
    _sync(delta, chat)
    stats.apply(delta)


def chat_transferred(*, chat: Chat, transfer: ChatTransfer | None = None) -> None:
    """The chat's newest transfer row was just written, and its owner and handler changed."""
    delta = _chat_delta(chat)
    if transfer is None:
        transfer = ChatTransfer.objects.filter(chat_id=chat.pk).order_by("-id").first()
    if transfer is not None:
        _count_transfer(
            delta, at=transfer.created_at, from_agent_id=transfer.from_agent_id, to_agent_id=transfer.to_agent_id
        )
    _sync(delta, chat)
    stats.apply(delta)


def client_message_posted(*, chat: Chat, message: Message) -> None:
    """A visitor message was stored. Until the chat's first reply it may open a conversation; it
    may also have reopened a closed room (its resolution is taken back)."""
    delta = _chat_delta(chat)
    _count_message(delta, chat, message)
    if chat.first_agent_reply_at is None and _opens_conversation(message):
        _sync(delta, chat, conversation_start=message.created_at)
    elif chat.closed_at is None:
        _sync(delta, chat)
    stats.apply(delta)
    stats.message_stored(chat=chat, counted=is_counted(message))


def agent_message_posted(*, chat: Chat, message: Message) -> None:
    """An operator message was stored; a visible one may have answered the chat."""
    delta = _chat_delta(chat)
    _count_message(delta, chat, message)
    _sync(delta, chat)
    stats.apply(delta)
    stats.message_stored(chat=chat, counted=is_counted(message))


def rating_created(*, chat: Chat, rating: Rating) -> None:
    delta = _chat_delta(chat)
    _count_rating(delta, chat, at=rating.created_at, value=rating.value, agent_id=rating.agent_id, sign=1)
    stats.apply(delta)
    stats.refresh_chat_rating(chat_id=chat.pk)


def rating_changed(*, chat: Chat, rating: Rating, previous_value: int, previous_agent_id: int | None) -> None:
    """`rating` (as stored now) replaced `previous_value` of `previous_agent_id`; its day does not move."""
    delta = _chat_delta(chat)
    _count_rating(delta, chat, at=rating.created_at, value=previous_value, agent_id=previous_agent_id, sign=-1)
    _count_rating(delta, chat, at=rating.created_at, value=rating.value, agent_id=rating.agent_id, sign=1)
    stats.apply(delta)
    stats.refresh_chat_rating(chat_id=chat.pk)


# --- the event handlers --------------------------------------------------------------------------------


# Services hand the locked chat and the stored rows over with the event; an event emitted by hand
# (tests, benchmarks) counts nothing.


def _chat(event: events.Event) -> Chat | None:
    return event.obj("chat")


def on_chat_attribution(event: events.Event) -> None:
    """chat.created, chat.accepted, chat.attributed, chat.closed, chat.status_changed: the snapshot
    follows the chat."""
    if chat := _chat(event):
        chat_changed(chat=chat)


def on_chat_transferred(event: events.Event) -> None:
    if chat := _chat(event):
        chat_transferred(chat=chat, transfer=event.obj("transfer"))


def on_message_created(event: events.Event) -> None:
    chat = _chat(event)
    message = event.obj("message")
    if chat is None or message is None:
        return
    if message.author_kind == Message.Author.CLIENT:
        client_message_posted(chat=chat, message=message)
    else:
        agent_message_posted(chat=chat, message=message)


def on_rating_created(event: events.Event) -> None:
    chat, rating = event.obj("chat"), event.obj("rating")
    if chat is not None and rating is not None:
        rating_created(chat=chat, rating=rating)


def on_rating_updated(event: events.Event) -> None:
    """The rating already holds its new value: take back the previous one the event carries."""
    chat, rating = event.obj("chat"), event.obj("rating")
    if chat is not None and rating is not None:
        rating_changed(
            chat=chat,
            rating=rating,
            previous_value=event.data["previous_value"],
            previous_agent_id=event.data["previous_operator_id"],
        )


def on_contact_merged(event: events.Event) -> None:
    """contact.merged, in the transaction: the moved chats' facts name the target (the export shows
    its guid; an erasure of the target hides them)."""
    target, chat_ids = event.obj("target"), event.obj("chat_ids")
    if target is None or not chat_ids:
        return
    ChatFacts.objects.filter(chat_id__in=chat_ids).update(contact_id=target.pk, contact_guid=target.guid)


def register() -> None:
    phase = events.IN_TRANSACTION
    events.subscribe(events.CONTACT_MERGED, on_contact_merged, phase=phase)
    attribution = [
        events.CHAT_CREATED,
        events.CHAT_ACCEPTED,
        events.CHAT_ATTRIBUTED,
        events.CHAT_CLOSED,
        events.CHAT_STATUS_CHANGED,
    ]
    events.subscribe(attribution, on_chat_attribution, phase=phase)
    events.subscribe(events.CHAT_TRANSFERRED, on_chat_transferred, phase=phase)
    events.subscribe(events.MESSAGE_CREATED, on_message_created, phase=phase)
    events.subscribe(events.RATING_CREATED, on_rating_created, phase=phase)
    events.subscribe(events.RATING_UPDATED, on_rating_updated, phase=phase)


# --- reads of a partial day (apps.stats.selectors) ----------------------------------------------------


def counters_between(
    *, widget_id: int, start: datetime, end: datetime, agents: bool = False, agent_ids: Collection[int] | None = None
) -> stats.Delta:
    """The counters of [start, end), a part of one Moscow day, from the per-chat facts and the
    event rows of those hours (index range scans on (widget, created_at)). Whole days are read from
    the rollups; this covers a window edge that is not a midnight. With `agents`, the agent rows
    too (only of `agent_ids` when given)."""
    delta = stats.Delta(widget_id)
    day = moscow_day(start)
    for facts in ChatFacts.objects.filter(widget_id=widget_id, created_at__gte=start, created_at__lt=end):
        _contribute(delta, facts, 1)
    delta.report.clear()  # reports read whole report days only
    if not agents:
        delta.agent.clear()
    elif agent_ids is not None:
        wanted = set(agent_ids)
        for key in [k for k in delta.agent if k[0] not in wanted]:
            del delta.agent[key]
    span = {"widget_id": widget_id, "created_at__gte": start, "created_at__lt": end}
    messages = Message.objects.filter(
        **span, visibility=Message.Visibility.PUBLIC, author_kind__in=COUNTED_AUTHORS
    ).order_by()
    for row in messages.values("chat__channel", "chat__is_internal").annotate(n=Count("id")):
        delta.add_widget((day, row["chat__channel"], row["chat__is_internal"]), {"messages_total": row["n"]})
    ratings = Rating.objects.filter(**span).order_by()
    for row in ratings.values("chat__channel", "chat__is_internal").annotate(s=Sum("value"), n=Count("id")):
        delta.add_widget(
            (day, row["chat__channel"], row["chat__is_internal"]), {"rating_sum": row["s"], "rating_count": row["n"]}
        )
    if not agents:
        return delta

    def only(queryset, column):
        queryset = queryset.filter(**{f"{column}__isnull": False})
        return queryset if agent_ids is None else queryset.filter(**{f"{column}__in": list(agent_ids)})

    operator_messages = only(messages.filter(author_kind__in=OPERATOR_AUTHORS), "agent_id")
    for row in operator_messages.values("agent_id").annotate(n=Count("id")):
        delta.add_agent((row["agent_id"], day), {"messages_total": row["n"]})
    for row in only(ratings, "agent_id").values("agent_id", "value").annotate(n=Count("id")):
        delta.add_agent((row["agent_id"], day), {f"rating_{row['value']}": row["n"]})
    transfers = ChatTransfer.objects.filter(**span).order_by()
    for column, counter in (("from_agent_id", "transferred_out"), ("to_agent_id", "transferred_in")):
        for row in only(transfers, column).values(column).annotate(n=Count("id")):
            delta.add_agent((row[column], day), {counter: row["n"]})
    return delta


# --- rebuild ----------------------------------------------------------------------------------------


def _conversation_starts(widget_id: int, first_id: int, last_id: int) -> dict[int, datetime]:
    """chat id -> the last visitor message opening a conversation, among the messages up to the
    chat's first reply (all of them while it has none), for chats first_id..last_id."""
    rows = (
        Message.objects.filter(widget_id=widget_id, chat_id__gte=first_id, chat_id__lte=last_id)
        .filter(Q(chat__first_agent_reply_at__isnull=True) | Q(created_at__lte=F("chat__first_agent_reply_at")))
        .order_by("chat_id", "created_at", "id")
        .values_list("chat_id", "created_at", "author_kind")
    )
    starts: dict[int, datetime] = {}
    current, previous = None, None
    for chat_id, at, author in rows.iterator(chunk_size=20_000):
        if chat_id != current:
            current, previous = chat_id, None
        if author == Message.Author.CLIENT and (previous is None or at - previous >= CONVERSATION_GAP):
            starts[chat_id] = at
        previous = at
    return starts


def _chat_counts(widget_id: int, first_id: int, last_id: int) -> tuple[dict[int, int], dict[int, int]]:
    """For chats first_id..last_id: chat id -> counted messages, and chat id -> latest rating."""
    chats = {"widget_id": widget_id, "chat_id__gte": first_id, "chat_id__lte": last_id}
    counted = Message.objects.filter(
        **chats, visibility=Message.Visibility.PUBLIC, author_kind__in=COUNTED_AUTHORS
    ).order_by()
    messages = dict(counted.values_list("chat_id").annotate(n=Count("id")))
    ratings = Rating.objects.filter(**chats).order_by("chat_id", "created_at", "id").values_list("chat_id", "value")
    return messages, dict(ratings)  # the last value of a chat is its latest


@transaction.atomic
def rebuild_widget_facts(*, widget_id: int, chunk_size: int = 5000) -> dict[str, int]:
    """Recompute every fact of the widget from Chat, Message, Rating and ChatTransfer.

    One transaction: readers see the old facts until it commits. Writes to the widget's chats
    while it runs are not guaranteed to be reflected; run it when the widget is quiet (or again).
    """
    tz = business_tz()
    stats.clear_widget_facts(widget_id=widget_id)
    delta = stats.Delta(widget_id)
    zone = delta.zone()
    routed = routing_facts.rebuild_into(delta, widget_id=widget_id)
    chats = 0
    last_id = 0
    while True:
        batch = list(
            Chat.objects.filter(widget_id=widget_id, pk__gt=last_id).order_by("pk").values(*_CHAT_FIELDS)[:chunk_size]
        )
        if not batch:
            break
        starts = _conversation_starts(widget_id, batch[0]["id"], batch[-1]["id"])
        messages_of, rating_of = _chat_counts(widget_id, batch[0]["id"], batch[-1]["id"])
        rows = []
        for values in batch:
            chat = SimpleNamespace(pk=values["id"], **values)
            facts = ChatFacts(
                chat_id=chat.pk,
                widget_id=widget_id,
                conversation_started_at=starts.get(chat.pk),
                messages=messages_of.get(chat.pk, 0),
                rating=rating_of.get(chat.pk),
            )
            facts.reroutes, facts.assignment_wait_ms = routed.get(chat.pk, (0, None))
            _observe(facts, chat, zone)
            _contribute(delta, facts, 1)
            rows.append(facts)
        stats.insert_chat_facts(rows)
        chats += len(batch)
        last_id = batch[-1]["id"]

    counted = Message.objects.filter(
        widget_id=widget_id, visibility=Message.Visibility.PUBLIC, author_kind__in=COUNTED_AUTHORS
    ).annotate(local_day=TruncDate("created_at", tzinfo=tz))
    messages = 0
    for row in counted.values("local_day", "chat__channel", "chat__is_internal").annotate(n=Count("id")).order_by():
        key = (row["local_day"], row["chat__channel"], row["chat__is_internal"])
        delta.add_widget(key, {"messages_total": row["n"]})
        messages += row["n"]
    operator = counted.filter(author_kind__in=OPERATOR_AUTHORS, agent_id__isnull=False)
    for row in operator.values("local_day", "agent_id").annotate(n=Count("id")).order_by():
        delta.add_agent((row["agent_id"], row["local_day"]), {"messages_total": row["n"]})

    ratings = Rating.objects.filter(widget_id=widget_id).values_list(
        "created_at", "value", "agent_id", "chat__channel", "chat__is_internal", "chat__department_id"
    )
    for at, value, agent_id, channel, internal, department_id in ratings.iterator(chunk_size=20_000):
        chat = SimpleNamespace(channel=channel, is_internal=internal, department_id=department_id)
        _count_rating(delta, chat, at=at, value=value, agent_id=agent_id, sign=1)
    report_facts.rebuild_sla_into(delta, widget_id=widget_id)
    transfers = ChatTransfer.objects.filter(widget_id=widget_id)
    for at, from_agent_id, to_agent_id in transfers.values_list("created_at", "from_agent_id", "to_agent_id"):
        _count_transfer(delta, at=at, from_agent_id=from_agent_id, to_agent_id=to_agent_id)

    stats.insert_rollups(delta)
    return {
        "chats": chats,
        "messages": messages,
        "widget_rows": len(delta.widget_rows()),
        "agent_rows": len(delta.agent_rows()),
    }

"""Reads of the console, composed from the chats and agents selectors; the agent's widget first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Case, Count, F, IntegerField, Min, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from apps.agents import selectors as agent_selectors
from apps.agents.models import Agent
from apps.ai.models import Assistant
from apps.canned import selectors as canned_selectors
from apps.canned.models import CannedResponse
from apps.chats import selectors as chat_selectors
from apps.chats import services as chat_services
from apps.chats.models import Chat, Message, Rating, VisitorSession
from apps.core.models import Widget
from apps.platform.numbers import MAX_ID
from apps.platform.statements import AnyOf, Ids, ModelStatement, Slot
from apps.routing import selectors as routing_selectors
from apps.routing.models import ChatRouting, RoutingSettings, SlaClock
from apps.stats import selectors as stats_selectors
from apps.widget import selectors as widget_selectors

from .models import SavedView

LIST_SIZE = 50
HISTORY_PAGE = 100
REPLAY_MAX = 500


# The views of the list (tabs with a count of open chats each); the list under a view shows open
# chats unless the status filter says otherwise.
VIEW_MINE, VIEW_UNASSIGNED, VIEW_ALL = "mine", "unassigned", "all"
VIEWS = (VIEW_MINE, VIEW_UNASSIGNED, VIEW_ALL)
ANY_STATUS = "any"


# The reports' drill-down (apps.console.reports): what a bar or a point of a chart counts.
HANDLING_FILTERS = ("ai", "human", "ai_to_human", "human_to_ai", "missed")
# Filter attributes whose query parameter has another name (`from` is a Python keyword).
PARAM_NAMES = {"date_from": "from", "date_to": "to"}


@dataclass(frozen=True)
class ChatFilters:
    view: str = VIEW_ALL
    status: str = Chat.Status.ACTIVE  # a status, or ANY_STATUS
    channel: str = ""
    q: str = ""
    label: tuple[str, ...] = ()  # label names: chats carrying every one
    # The drill-down: creation dates (inclusive, in the report's time zone), the routing owner,
    # the latest rating and the handling as the reports count it.
    date_from: date | None = None
    date_to: date | None = None
    agent_id: int | None = None
    rating: int | None = None
    handling: str = ""

    def params(self) -> list[tuple[str, str]]:
        """The filters as the list's query parameters (what a link to them carries), set ones only."""
        out = []
        for name, value in vars(self).items():
            key = PARAM_NAMES.get(name, name)
            if isinstance(value, tuple):  # a repeated filter (`label`): once a value
                out += [(key, one) for one in value]
            elif value not in (None, ""):
                out.append((key, value.isoformat() if isinstance(value, date) else str(value)))
        return out


def _drill_down(queryset: QuerySet[Chat], *, widget, filters: ChatFilters) -> QuerySet[Chat]:
    """The reports' drill-down filters: each the same rule the report counts by (apps.stats.reports)."""
    if filters.date_from is not None or filters.date_to is not None:
        zone = stats_selectors.get_report_tz(widget=widget)
        if filters.date_from is not None:
            queryset = queryset.filter(created_at__gte=datetime.combine(filters.date_from, time.min, tzinfo=zone))
        if filters.date_to is not None:
            end = datetime.combine(filters.date_to + timedelta(days=1), time.min, tzinfo=zone)
            queryset = queryset.filter(created_at__lt=end)
    if filters.agent_id is not None:
        queryset = queryset.filter(agent_id=filters.agent_id)
    if filters.rating is not None:
        latest = Rating.objects.filter(chat_id=OuterRef("pk")).order_by("-created_at", "-id").values("value")[:1]
        queryset = queryset.annotate(latest_rating=Subquery(latest)).filter(latest_rating=filters.rating)
    handling = {
        "ai": Q(handled_by_type=Chat.OperatorType.AI),
        "human": Q(handled_by_type=Chat.OperatorType.HUMAN),
        "ai_to_human": Q(went_ai_to_human=True),
        "human_to_ai": Q(went_human_to_ai=True),
        "missed": Q(handling=Chat.Handling.MISSED),
    }.get(filters.handling)
    if handling is not None:
        queryset = queryset.filter(handling)
    return queryset


def drill_down_agent(*, agent: Agent, filters: ChatFilters) -> Agent | None:
    """The operator the `agent_id` filter names, when it is one of the widget's (for its chip)."""
    if filters.agent_id is None:
        return None
    return Agent.objects.filter(widget_id=agent.widget_id, pk=filters.agent_id).first()


def routing_on(*, agent: Agent) -> bool:
    """Whether the widget routes chats (a mode other than `manual`): the Unassigned view is then the
    routing queue, in queue order."""
    return routing_selectors.routing_settings(agent.widget).mode != RoutingSettings.Mode.MANUAL


def queue_position_expression():
    """The outer chat's place in its widget's queue (1 is the next served; the queue's order is
    `queue_since, chat_id`), null when it is not queued."""
    ahead = (
        ChatRouting.objects.filter(widget_id=OuterRef("widget_id"), queue_since__isnull=False)
        .filter(
            Q(queue_since__lt=OuterRef("routing__queue_since"))
            | Q(queue_since=OuterRef("routing__queue_since"), chat_id__lt=OuterRef("pk"))
        )
        .order_by()
        .values("widget_id")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return Case(
        When(routing__queue_since__isnull=True, then=None),
        default=Coalesce(Subquery(ahead), 0) + 1,
        output_field=IntegerField(),
    )


def _unseen_client_messages():
    """The visitor's messages of the outer chat that no operator has seen yet (the read receipt
    `mark_seen(by="agent")` sets `seen_at`)."""
    return Message.objects.filter(
        widget_id=OuterRef("widget_id"), chat_id=OuterRef("pk"), author_kind=Message.Author.CLIENT, seen_at__isnull=True
    )


# The list's orders: the routing queue's, newest activity (a search), the operator's own chats first.
ORDER_QUEUE, ORDER_ACTIVITY, ORDER_MINE_FIRST = "queue", "activity", "mine_first"


def list_chats(*, agent: Agent, filters: ChatFilters, queue: bool = False) -> list[Chat]:
    """The chats with messages (an empty room has nothing to read or answer) of the agent's widget
    under a view, newest activity first (LIST_SIZE at most), with
    what a row shows read in the same statement: the contact, the owner, the last message, the count
    of visitor messages no operator has seen (`unread`), when the visitor's unanswered messages
    began (`waiting_since`, set while the chat awaits a reply: the last message is the visitor's
    and the chat is neither closed nor spam; the row is drawn marked then) and, for a contact with no
    name, e-mail or phone, the page of its newest visitor session (`visitor_page`). A chat whose
    contact is under erasure is left out, as every read of chats leaves it out.

    The agent's own chats come first (each operator sees what is theirs at the top); a search (`q`)
    lists its matches by newest activity alone, whoever owns them. With `queue`
    (routing on), the Unassigned view is the routing queue: the chats waiting in it, in queue order,
    each with its `queue_position`; every row carries `queue_since` (set while the chat waits)."""
    widget = agent.widget
    queryset = (
        Chat.objects.filter(widget_id=widget.pk, last_message_at__isnull=False)
        .live()
        .select_related("contact", "agent", "last_message")
    )
    if filters.view == VIEW_MINE:
        queryset = queryset.filter(agent_id=agent.pk)
    elif filters.view == VIEW_UNASSIGNED:
        queryset = queryset.filter(agent__isnull=True)
        if queue:
            queryset = queryset.filter(routing__queue_since__isnull=False)
    status = None if filters.status == ANY_STATUS else filters.status or None
    label_ids = None
    if filters.label:
        keys = {chat_services.label_key(name) for name in filters.label}
        label_ids = [label.pk for label in chat_selectors.get_labels_by_key(widget=widget, keys=keys).values()]
        if len(label_ids) < len(keys):  # a label deleted meanwhile: no chat carries it
            return []
    queryset = chat_selectors.filter_chats(
        queryset,
        widget=widget,
        status=status,
        channel=filters.channel or None,
        q=filters.q or None,
        label_ids=label_ids,
    )
    queryset = _drill_down(queryset, widget=widget, filters=filters)
    by_queue = queue and filters.view == VIEW_UNASSIGNED
    order = ORDER_QUEUE if by_queue else ORDER_ACTIVITY if filters.q else ORDER_MINE_FIRST
    activity = ("-last_message_at", "-id")
    # The page's chats are chosen from the chat rows alone; the joins and the per-chat subqueries
    # of `_LIST_ROWS` then run for those LIST_SIZE, not for every chat the filters match.
    if by_queue:
        page = list(queryset.order_by("routing__queue_since", "id").values_list("pk", flat=True)[:LIST_SIZE])
    elif filters.q:
        # A search is one walk in list order that stops at a page. Putting the operator's matches
        # first would have to prove, for a text the trigram index cannot narrow, that none of their
        # other chats matches: a probe of each of them, however few match.
        page = list(queryset.order_by(*activity).values_list("pk", flat=True)[:LIST_SIZE])
    else:
        # The operator's own chats, then the others, each newest activity first: two walks of the
        # widget's activity indexes that stop at a page, where one order over both would sort every
        # chat the filters match.
        page = list(queryset.filter(agent_id=agent.pk).order_by(*activity).values_list("pk", flat=True)[:LIST_SIZE])
        if len(page) < LIST_SIZE:
            others = queryset.exclude(agent_id=agent.pk).order_by(*activity).values_list("pk", flat=True)
            page += others[: LIST_SIZE - len(page)]
    if not page:
        return []
    return _LIST_ROWS.instances((order,), widget=widget.pk, page=page, agent=agent.pk)


# The columns a row draws (console/_chat_list.html), besides the keys: the other columns of the chat,
# its contact, owner and last message (four of them JSON) would be loaded and converted for every row
# of every list and never shown. A row that draws another one adds it here.
LIST_ROW_FIELDS = (
    "widget_id",
    "status",
    "channel",
    "last_message_at",
    "awaiting_human_since",
    "contact__name",
    "contact__email",
    "contact__phone",
    "agent__name",
    "last_message__visibility",
    "last_message__body",
)


def _list_rows(order: str) -> QuerySet[Chat]:
    """The rows of a page of chats (`page`, ids of the widget `widget`) with what each row shows, in
    the list's `order`: the queue's, newest activity, or the operator's (`agent`) own chats first."""
    public = Message.objects.filter(
        widget_id=OuterRef("widget_id"), chat_id=OuterRef("pk"), visibility=Message.Visibility.PUBLIC
    )
    replied = public.filter(author_kind__in=[Message.Author.AGENT, Message.Author.AI]).order_by("-created_at", "-id")
    unanswered = public.filter(author_kind=Message.Author.CLIENT, created_at__gt=OuterRef("replied_at"))
    first_unanswered = unanswered.order_by("created_at", "id").values("created_at")[:1]
    first_ever = public.filter(author_kind=Message.Author.CLIENT).order_by("created_at", "id").values("created_at")[:1]
    unread = _unseen_client_messages().order_by().values("chat_id").annotate(n=Count("pk")).values("n")[:1]
    awaiting = Q(last_message__author_kind=Message.Author.CLIENT) & ~Q(
        status__in=[Chat.Status.EXPIRED, Chat.Status.SPAM]
    )
    queryset = (
        Chat.objects.filter(AnyOf(F("pk"), Slot("page", Ids())), widget_id=Slot("widget", Widget._meta.pk))
        .select_related("contact", "agent", "last_message")
        .only(*LIST_ROW_FIELDS)
        .annotate(
            unread=Coalesce(Subquery(unread), 0),
            replied_at=Subquery(replied.values("created_at")[:1]),
            waiting_since=Case(
                When(awaiting & Q(replied_at__isnull=True), then=Subquery(first_ever)),
                When(awaiting, then=Subquery(first_unanswered)),
                default=None,
            ),
            visitor_page=_visitor_page(),
            queue_since=F("routing__queue_since"),
        )
    )
    if order == ORDER_QUEUE:
        return queryset.annotate(queue_position=queue_position_expression()).order_by("routing__queue_since", "id")
    if order == ORDER_ACTIVITY:
        return queryset.order_by("-last_message_at", "-id")
    mine = Slot("agent", Agent._meta.pk)
    mine_first = Case(When(agent_id=mine, then=Value(0)), default=Value(1), output_field=IntegerField())
    return queryset.order_by(mine_first, "-last_message_at", "-id")


# Compiled once per order (apps.platform.statements): building and compiling this query through the
# ORM cost as much as running it.
_LIST_ROWS = ModelStatement(_list_rows)


def _visitor_page():
    """For a contact with no name, e-mail or phone: the page of its newest visitor session (how the
    console names an anonymous visitor); "" otherwise."""
    page = (
        VisitorSession.objects.filter(widget_id=OuterRef("widget_id"), contact_id=OuterRef("contact_id"))
        .exclude(page_url="")
        .order_by("-created_at", "-id")
        .values("page_url")[:1]
    )
    anonymous = Q(contact__name="", contact__email="", contact__phone="")
    return Case(When(anonymous, then=Subquery(page)), default=Value(""))


def view_counts(*, agent: Agent, queue: bool = False) -> dict[str, int]:
    """Open (`active`) chats with messages under each view, in one statement: {"mine",
    "unassigned", "all"}; with `queue` (routing on) "unassigned" counts the chats in the queue."""
    unassigned = Q(agent__isnull=True)
    if queue:
        unassigned &= Q(routing__queue_since__isnull=False)
    return (
        Chat.objects.filter(widget_id=agent.widget_id, status=Chat.Status.ACTIVE, last_message_at__isnull=False)
        .live()
        .aggregate(
            mine=Count("pk", filter=Q(agent_id=agent.pk)),
            unassigned=Count("pk", filter=unassigned),
            all=Count("pk"),
        )
    )


@dataclass(frozen=True)
class SlaMark:
    """A chat's SLA state as the console marks it: the nearest due time of its running clocks
    (`due_at`, None when none runs) and whether any clock of it was breached."""

    due_at: datetime | None
    breached: bool


def sla_marks(chat_ids: list[int]) -> dict[int, SlaMark]:
    """The SLA marks of a page of chats, in one statement (chats with no clock are absent)."""
    if not chat_ids:
        return {}
    running = Q(stopped_at__isnull=True, breached_at__isnull=True)
    rows = (
        SlaClock.objects.filter(chat_id__in=chat_ids)
        .filter(running | Q(breached_at__isnull=False))
        .order_by()
        .values("chat_id")
        .annotate(due=Min("due_at", filter=running), breaches=Count("pk", filter=Q(breached_at__isnull=False)))
    )
    return {row["chat_id"]: SlaMark(due_at=row["due"], breached=row["breaches"] > 0) for row in rows}


def assign_targets(*, agent: Agent) -> QuerySet[Agent]:
    """Who the owner may give a queued chat to: the widget's human agents who are not suspended."""
    return (
        Agent.objects.filter(widget_id=agent.widget_id, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .order_by("name", "pk")
    )


def newest_unseen_client_message(chat: Chat) -> Message | None:
    """The newest visitor message of `chat` no operator has seen (what the console marks seen when
    the operator has the chat in front of them), or None."""
    return (
        Message.objects.filter(
            widget_id=chat.widget_id, chat_id=chat.pk, author_kind=Message.Author.CLIENT, seen_at__isnull=True
        )
        .order_by("-created_at", "-id")
        .first()
    )


def get_chat(*, agent: Agent, chat_id: int) -> Chat | None:
    """A chat of the agent's widget (None for another widget's id, or one whose contact is under
    erasure, as for a missing one)."""
    if not 0 < chat_id <= MAX_ID:
        return None
    return (
        Chat.objects.filter(widget_id=agent.widget_id, pk=chat_id)
        .live()
        .select_related("contact", "agent", "handled_by")
        .annotate(visitor_page=_visitor_page())
        .first()
    )


def can_suggest(chat: Chat) -> bool:
    """Whether the composer offers "Suggest": the chat's widget has an enabled assistant (the one
    `apps.ai.assist.suggest_reply` would run, or none)."""
    return Assistant.objects.filter(widget_id=chat.widget_id, enabled=True).exists()


def _messages(chat: Chat) -> QuerySet[Message]:
    return chat_selectors.filter_messages(chat=chat).select_related("agent")


def latest_messages(chat: Chat) -> tuple[list[Message], bool]:
    """The last HISTORY_PAGE messages oldest first, and whether older ones exist."""
    rows = list(_messages(chat).order_by("-id")[: HISTORY_PAGE + 1])
    return list(reversed(rows[:HISTORY_PAGE])), len(rows) > HISTORY_PAGE


def messages_before(chat: Chat, before_id: int) -> tuple[list[Message], bool]:
    rows = list(_messages(chat).filter(pk__lt=before_id).order_by("-id")[: HISTORY_PAGE + 1])
    return list(reversed(rows[:HISTORY_PAGE])), len(rows) > HISTORY_PAGE


def messages_after(chat: Chat, after_id: int) -> list[Message]:
    """What arrived after the last message the console shows (live pushes and reconnect replay)."""
    return list(_messages(chat).filter(pk__gt=after_id).order_by("id")[:REPLAY_MAX])


def transfer_targets(*, agent: Agent) -> QuerySet[Agent]:
    """Human agents of the widget a chat can be handed to (not banned, not the agent itself)."""
    return (
        Agent.objects.filter(widget_id=agent.widget_id, type=Agent.Type.HUMAN)
        .exclude(status=Agent.Status.BANNED)
        .exclude(pk=agent.pk)
        .order_by("name", "pk")
    )


def online_agent_ids(*, agent: Agent) -> set[int]:
    return agent_selectors.online_agent_ids(agent.widget)


CANNED_PICKS = 20


def canned_picks(*, agent: Agent, q: str) -> list[CannedResponse]:
    """The composer's picker: the widget's canned responses matching `q` (as the API's `q`), by shortcut."""
    queryset = CannedResponse.objects.filter(widget_id=agent.widget_id)
    return list(canned_selectors.list_canned_responses(queryset, q=q or None).order_by("shortcut", "id")[:CANNED_PICKS])


def render_canned(*, agent: Agent, chat: Chat, canned_id: int) -> str | None:
    """A canned response of the agent's widget rendered for `chat` (the API's render), or None. An
    operator who may open the chat reads its contact (the chat's panel shows the name and e-mail)."""
    canned = CannedResponse.objects.filter(widget_id=agent.widget_id, pk=canned_id).first()
    if canned is None:
        return None
    return canned_selectors.render_for_chat(widget=agent.widget, canned=canned, chat=chat, contacts=True)


file_url = chat_selectors.file_url


def business_hours(*, agent: Agent):
    """The widget's business-hours state: the header says when the widget is closed to visitors
    (read from the row: one query per page, whatever the cache holds)."""
    return widget_selectors.business_hours_state(agent.widget, cached=False)


def saved_views(*, agent: Agent) -> list[SavedView]:
    """The operator's saved views of the list, oldest first (the order they were made in)."""
    return list(SavedView.objects.filter(widget_id=agent.widget_id, agent_id=agent.pk).order_by("id"))

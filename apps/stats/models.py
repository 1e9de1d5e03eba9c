"""Statistics facts, maintained by the chat services (apps.stats.facts) in the transaction of the
change they count, so no statistics read scans messages.

- `ChatFacts`: one row per chat, the chat's attribution as last added to the daily rollups (its
  "snapshot"). A change of the chat is applied as (new contribution - snapshot contribution), so
  a repeated call adds nothing and a chat that moves from missed to human leaves its creation
  day's `chats_missed` and enters its `chats_handled_human` in one step. It also holds the chat's
  contact, department, closing time, counted messages and latest rating, so the chats export reads
  one row per chat and nothing else.
- `DailyWidgetFacts`: per Europe/Moscow day, channel and internal flag, the widget's counters.
  Chat counters sit on the chat's creation day; messages and ratings on their own day.
- `DailyAgentFacts`: per agent and Moscow day, the agent row counters.
- `AssignmentFact`: one row per change of routing owner that routing statistics count (an
  assignment by routing, a re-route, the end of a chat's wait in the queue), on its own moment: the
  event rows a window edge inside a day and the rebuild read, as messages and transfers are for the
  other counters.

A day's counters of one key are spread over FACT_SHARDS rows (`shard`, the chat's id modulo
FACT_SHARDS; the rebuild writes shard 0): every message adds to them inside its transaction, and with
one row per key the messages of all a widget's chats would wait for each other's commits on that
row's lock. The selectors sum the rows, so a reader never sees a shard.

Agents are referenced by plain integer ids (no foreign key): facts outlive an agent row, and a
decrement for an agent never fails on a constraint. Counters are signed integers, never clamped.
Every index starts with the widget, so the widget foreign keys carry no index of their own.
"""

from __future__ import annotations

from django.db import models

from apps.agents.models import Department
from apps.chats.models import Chat
from apps.core.models import Widget
from apps.erasure.selectors import LiveQuerySet

from . import histogram

# Rows per key of the daily rollups (see the module docstring).
FACT_SHARDS = 16
# Rows per key of the report rollups' widget rows: they change with a chat's state (created,
# answered, closed, rated), not with each message, so fewer rows spread the same contention and a
# report sums a quarter of the rows.
REPORT_SHARDS = 4

# Counter columns of the daily rollups (the names the selectors and the upserts use).
WIDGET_COUNTERS = (
    "chats_total",
    "chats_missed",
    "chats_accepted_ai",
    "chats_accepted_human",
    "chats_handled_ai",
    "chats_handled_human",
    "chats_ai_to_human",
    "chats_human_to_ai",
    "messages_total",
    "response_ms_sum",
    "response_count",
    "first_response_ms_sum",
    "first_response_count",
    "rating_sum",
    "rating_count",
    "chats_routed",
    "chats_rerouted",
    "assignment_wait_ms_sum",
    "assignment_wait_count",
)
AGENT_COUNTERS = (
    "chats_total",
    "chats_missed",
    "chats_accepted",
    "chats_handled",
    "response_ms_sum",
    "response_count",
    "messages_total",
    "transferred_in",
    "transferred_out",
    "rating_1",
    "rating_2",
    "rating_3",
    "rating_4",
    "rating_5",
    "chats_routed",
)


class ChatFactsQuerySet(LiveQuerySet):
    """`live()`: the facts of a chat whose contact is under erasure read as missing (the copied
    `contact_id` spares the chats export a join)."""

    contact_path = "contact_id"


class ChatFacts(models.Model):
    """What the rollups hold for one chat (see the module docstring)."""

    chat = models.OneToOneField(Chat, primary_key=True, on_delete=models.CASCADE, related_name="+")
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    created_at = models.DateTimeField()
    day = models.DateField(help_text="Europe/Moscow date of created_at.")
    # The report day (DailyReportFacts) the chat's counters sit on, so a change takes them back
    # from where they were added even when the widget's time zone changed in between.
    report_day = models.DateField(null=True, blank=True)
    channel = models.CharField(max_length=64)
    is_internal = models.BooleanField(default=False)
    handling = models.CharField(max_length=16, default=Chat.Handling.MISSED)
    went_ai_to_human = models.BooleanField(default=False)
    went_human_to_ai = models.BooleanField(default=False)
    accepted_type = models.CharField(max_length=8, blank=True, default="")
    handled_type = models.CharField(max_length=8, blank=True, default="")
    owner_agent_id = models.BigIntegerField(null=True, blank=True)
    accepted_agent_id = models.BigIntegerField(null=True, blank=True)
    handled_agent_id = models.BigIntegerField(null=True, blank=True)
    first_reply_at = models.DateTimeField(null=True, blank=True)
    # The visitor message that opened the conversation awaiting the chat's first reply.
    conversation_started_at = models.DateTimeField(null=True, blank=True)
    first_response_ms = models.BigIntegerField(null=True, blank=True)
    # The chat's own columns the chats export reads, so it reads no chat row.
    contact_id = models.BigIntegerField(null=True, blank=True)
    # The contact's public id, the one the export shows: copied once rather than looked up for every
    # exported row (a chat changes contact only by a merge, whose handler rewrites both columns).
    contact_guid = models.CharField(max_length=32, blank=True, default="")
    department = models.ForeignKey(
        Department, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    # Kept by the message and rating handlers, outside the snapshot.
    messages = models.IntegerField(
        default=0, help_text="Counted messages: public, by the visitor, a person or the AI operator."
    )
    rating = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The chat's latest rating.")
    # Routing as last counted (apps.stats.routing_facts): the re-routes of the chat and its wait from
    # queueing to the first assignment, so a change of owner adds only what is new.
    reroutes = models.IntegerField(default=0)
    assignment_wait_ms = models.BigIntegerField(null=True, blank=True)

    objects = ChatFactsQuerySet.as_manager()

    class Meta:
        verbose_name = "chat facts"
        verbose_name_plural = "chat facts"
        # (created_at, chat) is the chats export's order.
        indexes = [models.Index(fields=["widget", "created_at", "chat"], name="chatfacts_widget_created_chat")]

    def __str__(self) -> str:
        return f"facts of chat {self.chat_id}"


class DailyWidgetFacts(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    channel = models.CharField(max_length=64)
    is_internal = models.BooleanField(default=False)
    shard = models.PositiveSmallIntegerField(default=0)
    chats_total = models.IntegerField(default=0)
    chats_missed = models.IntegerField(default=0)
    chats_accepted_ai = models.IntegerField(default=0)
    chats_accepted_human = models.IntegerField(default=0)
    chats_handled_ai = models.IntegerField(default=0)
    chats_handled_human = models.IntegerField(default=0)
    chats_ai_to_human = models.IntegerField(default=0)
    chats_human_to_ai = models.IntegerField(default=0)
    messages_total = models.BigIntegerField(default=0)
    response_ms_sum = models.BigIntegerField(default=0)
    response_count = models.IntegerField(default=0)
    first_response_ms_sum = models.BigIntegerField(default=0)
    first_response_count = models.IntegerField(default=0)
    rating_sum = models.IntegerField(default=0)
    rating_count = models.IntegerField(default=0)
    chats_routed = models.IntegerField(default=0)
    chats_rerouted = models.IntegerField(default=0)
    assignment_wait_ms_sum = models.BigIntegerField(default=0)
    assignment_wait_count = models.IntegerField(default=0)

    class Meta:
        verbose_name = "daily widget facts"
        verbose_name_plural = "daily widget facts"
        constraints = [
            models.UniqueConstraint(
                fields=["widget", "day", "channel", "is_internal", "shard"], name="dailywidgetfacts_key"
            ),
        ]

    def __str__(self) -> str:
        return f"widget {self.widget_id} {self.day} {self.channel}"


class DailyAgentFacts(models.Model):
    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    agent_id = models.BigIntegerField()
    day = models.DateField()
    shard = models.PositiveSmallIntegerField(default=0)
    chats_total = models.IntegerField(default=0)
    chats_missed = models.IntegerField(default=0)
    chats_accepted = models.IntegerField(default=0)
    chats_handled = models.IntegerField(default=0)
    response_ms_sum = models.BigIntegerField(default=0)
    response_count = models.IntegerField(default=0)
    messages_total = models.BigIntegerField(default=0)
    transferred_in = models.IntegerField(default=0)
    transferred_out = models.IntegerField(default=0)
    rating_1 = models.IntegerField(default=0)
    rating_2 = models.IntegerField(default=0)
    rating_3 = models.IntegerField(default=0)
    rating_4 = models.IntegerField(default=0)
    rating_5 = models.IntegerField(default=0)
    chats_routed = models.IntegerField(default=0)

    class Meta:
        verbose_name = "daily agent facts"
        verbose_name_plural = "daily agent facts"
        constraints = [
            models.UniqueConstraint(fields=["widget", "agent_id", "day", "shard"], name="dailyagentfacts_key"),
        ]

    def __str__(self) -> str:
        return f"agent {self.agent_id} {self.day}"


REPORT_COUNTERS = (
    "chats_total",
    "chats_missed",
    "chats_accepted",
    "chats_handled_ai",
    "chats_handled_human",
    "chats_ai_to_human",
    "chats_human_to_ai",
    "rating_1",
    "rating_2",
    "rating_3",
    "rating_4",
    "rating_5",
    "sla_met",
    "sla_breached",
    *histogram.FIRST_RESPONSE,
    *histogram.RESOLUTION,
)


class DailyReportFacts(models.Model):
    """The owner's reports (apps.stats.reports), per report day: the widget's business-hours time
    zone when it has one, else Europe/Moscow, as it was when the change was counted.

    Two kinds of rows share the table. Widget rows (`agent_id` 0) carry every chat of the widget by
    channel and department (0: none), spread over REPORT_SHARDS rows per key. Agent rows
    (`department_id` 0) carry what each counter credits that agent with: the chats it owns (totals,
    handling, missed, their durations), the chats it accepted, the ratings it received and its SLA
    clocks; on shard 0 only, since one operator's chats seldom commit at once. Chat counters sit on
    the chat's creation day, ratings on their own day, SLA clocks on the day they were decided (met:
    stopped in time; breached: ran out); first response and resolution are histograms
    (apps.stats.histogram)."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    channel = models.CharField(max_length=64)
    is_internal = models.BooleanField(default=False)
    agent_id = models.BigIntegerField(default=0)
    department_id = models.BigIntegerField(default=0)
    shard = models.PositiveSmallIntegerField(default=0)
    chats_total = models.IntegerField(default=0)
    chats_missed = models.IntegerField(default=0)
    chats_accepted = models.IntegerField(default=0)
    chats_handled_ai = models.IntegerField(default=0)
    chats_handled_human = models.IntegerField(default=0)
    chats_ai_to_human = models.IntegerField(default=0)
    chats_human_to_ai = models.IntegerField(default=0)
    rating_1 = models.IntegerField(default=0)
    rating_2 = models.IntegerField(default=0)
    rating_3 = models.IntegerField(default=0)
    rating_4 = models.IntegerField(default=0)
    rating_5 = models.IntegerField(default=0)
    sla_met = models.IntegerField(default=0)
    sla_breached = models.IntegerField(default=0)
    for _column in (*histogram.FIRST_RESPONSE, *histogram.RESOLUTION):
        locals()[_column] = models.IntegerField(default=0)
    del _column

    class Meta:
        verbose_name = "daily report facts"
        verbose_name_plural = "daily report facts"
        constraints = [
            models.UniqueConstraint(
                fields=["widget", "agent_id", "day", "channel", "is_internal", "department_id", "shard"],
                name="dailyreportfacts_key",
            ),
        ]

    def __str__(self) -> str:
        return f"report of widget {self.widget_id} {self.day} {self.channel}"


class AssignmentFact(models.Model):
    """A counted change of a chat's routing owner (see the module docstring). Plain ids: the row
    outlives the chat and the agent, like the rollups it feeds."""

    widget = models.ForeignKey(Widget, on_delete=models.CASCADE, related_name="+", db_index=False)
    at = models.DateTimeField()
    chat_id = models.BigIntegerField()
    channel = models.CharField(max_length=64)
    is_internal = models.BooleanField(default=False)
    agent_id = models.BigIntegerField(null=True, blank=True)
    routed = models.BooleanField(default=False, help_text="Routing assigned the chat to `agent_id`.")
    rerouted = models.PositiveSmallIntegerField(default=0, help_text="Re-routes this change made.")
    wait_ms = models.BigIntegerField(
        null=True, blank=True, help_text="Milliseconds from queueing to this, the chat's first assignment."
    )

    class Meta:
        verbose_name = "assignment fact"
        verbose_name_plural = "assignment facts"
        indexes = [models.Index(fields=["widget", "at"], name="assignmentfact_widget_at")]

    def __str__(self) -> str:
        return f"assignment of chat {self.chat_id} at {self.at}"

"""Leave the database as the benchmark found it: a snapshot of everything a benchmark may change in
a widget, restored afterwards and verified by a fingerprint taken before and after.

Every model with a `widget` foreign key is covered:
- the three big tables (messages, chats, contacts): rows added during the run are deleted (their
  primary keys are above the largest one before the run; the ORM's delete takes what hangs on them);
  the chats the benchmark writes into, and their statistics facts, are put back field by field;
- every other table of the widget (statistics rollups, outbox events, idempotency keys, tokens,
  webhook subscriptions, visitor sessions, ...): its rows are snapshotted whole; rows added are
  deleted and changed rows are put back.

The fingerprint is the count and largest primary key of each big table plus a digest of every
other table's rows of the widget and of the touched chats' rows and facts; `Restore` raises
`NotRestored` when the fingerprints differ (the benchmark then fails).
While the block runs, the snapshot is also kept in a file (var/bench/NAME.restore.pickle): a run
stopped before its clean-up (killed, cut off) leaves it behind, and the next `Restore` of that name
first puts the stopped run's widget back from it, so its rows do not stay in the data set (nor collide
with the next run's, as unique names and addresses would).

Celery hand-offs of the run's outbox events that no worker took are removed from the Redis broker
queue too (when the broker is Redis), so no task for a deleted event is left behind; so are queued AI
answers for messages that no longer exist (each visitor message of a widget with an AI operator
queues one, and the run's messages are deleted).
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
from collections import Counter
from pathlib import Path

from .env import ROOT

BIG = ("chats.Message", "chats.Chat", "chats.Contact")


class NotRestored(RuntimeError):
    pass


def _widget_models():
    from django.apps import apps

    found = []
    for model in apps.get_models():
        try:
            field = model._meta.get_field("widget")
        except Exception:
            continue
        if getattr(field, "many_to_one", False) or getattr(field, "one_to_one", False):
            found.append(model)
    return sorted(found, key=lambda m: m._meta.label)


def _rows(queryset) -> list[dict]:
    pk = queryset.model._meta.pk.attname
    return list(queryset.order_by(pk).values())


def delete_in_batches(queryset, batch: int = 10_000) -> None:
    """Delete the rows of `queryset` a batch of primary keys at a time: the ORM's delete looks up what
    hangs on the rows with one `IN` list of their keys per relation, and PostgreSQL takes at most
    65,535 parameters in a statement."""
    model = queryset.model
    while ids := list(queryset.order_by("pk").values_list("pk", flat=True)[:batch]):
        model.objects.filter(pk__in=ids).delete()


def _digest(rows: list[dict]) -> str:
    return hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()[:16]


def fingerprint(widget_id: int, chat_ids: list[int]) -> dict[str, object]:
    from django.db.models import Count, Max

    from apps.chats.models import Chat
    from apps.stats.models import ChatFacts

    out: dict[str, object] = {}
    for model in _widget_models():
        queryset = model.objects.filter(widget_id=widget_id)
        if model._meta.label in BIG:
            out[model._meta.label] = queryset.aggregate(n=Count("pk"), top=Max("pk"))
        elif model is not ChatFacts:
            out[model._meta.label] = _digest(_rows(queryset))
    out["ChatFacts.count"] = ChatFacts.objects.filter(widget_id=widget_id).count()
    out["touched chats"] = _digest(_rows(Chat.objects.filter(pk__in=chat_ids)))
    out["touched chat facts"] = _digest(_rows(ChatFacts.objects.filter(chat_id__in=chat_ids)))
    return out


STATE_DIR = ROOT / "var" / "bench"


class Restore:
    """with Restore(widget_id, chat_ids): ... — snapshot on entry, restore and verify on exit; a
    stopped run's snapshot left in `state_dir` is put back first."""

    def __init__(self, widget_id: int, chat_ids: list[int], *, name: str, state_dir: Path | None = None):
        self.widget_id, self.chat_ids, self.name = widget_id, list(chat_ids), name
        self.state_path = (state_dir or STATE_DIR) / f"{name}.restore.pickle"

    def __enter__(self) -> Restore:
        from django.db.models import Max

        from apps.chats.models import Chat
        from apps.stats.models import ChatFacts

        self._put_back_a_stopped_run()
        self.before = fingerprint(self.widget_id, self.chat_ids)
        self.tops, self.snapshots = {}, {}
        for model in _widget_models():
            queryset = model.objects.filter(widget_id=self.widget_id)
            if model._meta.label in BIG:
                self.tops[model] = queryset.aggregate(top=Max("pk"))["top"] or 0
            elif model is not ChatFacts:
                self.snapshots[model] = _rows(queryset)
        self.chats = _rows(Chat.objects.filter(pk__in=self.chat_ids))
        self.facts = _rows(ChatFacts.objects.filter(chat_id__in=self.chat_ids))
        self.outbox_ids = set(self._outbox_ids())
        self._keep_state()
        return self

    _STATE = ("widget_id", "chat_ids", "before", "chats", "facts", "outbox_ids")

    def _keep_state(self) -> None:
        """The snapshot in a file, with the models by their labels, until the clean-up has run."""
        state = {key: getattr(self, key) for key in self._STATE}
        state["tops"] = {model._meta.label: top for model, top in self.tops.items()}
        state["snapshots"] = {model._meta.label: rows for model, rows in self.snapshots.items()}
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.state_path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(state))
        partial.replace(self.state_path)

    def _put_back_a_stopped_run(self) -> None:
        if not self.state_path.exists():
            return
        from django.apps import apps

        from apps.core.models import Widget

        # the harness's own file, written by an earlier run of this benchmark in var/bench
        state = pickle.loads(self.state_path.read_bytes())  # noqa: S301
        if Widget.objects.filter(pk=state["widget_id"]).exists():
            print(f"{self.name}: an earlier run stopped before its clean-up: putting its widget back first", flush=True)
            stopped = Restore(state["widget_id"], state["chat_ids"], name=f"{self.name} (stopped run)")
            for key in self._STATE:
                setattr(stopped, key, state[key])
            stopped.tops = {apps.get_model(label): top for label, top in state["tops"].items()}
            stopped.snapshots = {apps.get_model(label): rows for label, rows in state["snapshots"].items()}
            stopped.restore()
        self.state_path.unlink()

    def _outbox_ids(self):
        from apps.core.models import OutboxEvent

        return (str(pk) for pk in OutboxEvent.objects.filter(widget_id=self.widget_id).values_list("pk", flat=True))

    def __exit__(self, *exc) -> None:
        self.restore()
        self.state_path.unlink(missing_ok=True)

    def restore(self) -> None:
        from django.db import transaction

        from apps.chats.models import Chat
        from apps.stats.models import ChatFacts

        new_events = set(self._outbox_ids()) - self.outbox_ids
        with transaction.atomic():
            for row in self.chats:  # first: a restored chat no longer points at a message of the run
                Chat.objects.filter(pk=row["id"]).update(**{k: v for k, v in row.items() if k != "id"})
            for label in BIG:  # messages, then chats (with what hangs on them), then contacts
                model = next(m for m in self.tops if m._meta.label == label)
                delete_in_batches(model.objects.filter(widget_id=self.widget_id, pk__gt=self.tops[model]))
            had_facts = {row["chat_id"] for row in self.facts}
            ChatFacts.objects.filter(chat_id__in=self.chat_ids).exclude(chat_id__in=had_facts).delete()
            for row in self.facts:
                ChatFacts.objects.filter(pk=row["chat_id"]).update(**{k: v for k, v in row.items() if k != "chat_id"})
            for model, rows in self.snapshots.items():
                pk = model._meta.pk.attname
                kept = {row[pk]: row for row in rows}
                delete_in_batches(model.objects.filter(widget_id=self.widget_id).exclude(pk__in=list(kept)))
                current = {row[pk]: row for row in _rows(model.objects.filter(widget_id=self.widget_id))}
                for key, row in kept.items():
                    if current.get(key) != row:
                        model.objects.filter(pk=key).update(**{k: v for k, v in row.items() if k != pk})
        removed = drop_queued_hand_offs(new_events) + drop_stale_ai_answers()
        after = fingerprint(self.widget_id, self.chat_ids)
        differ = {key: (self.before[key], after.get(key)) for key in self.before if after.get(key) != self.before[key]}
        if differ:
            raise NotRestored(f"{self.name}: the database differs from before the run: {differ}")
        print(
            f"{self.name}: clean-up: the widget's rows, statistics rollups and facts are as before the run "
            f"(fingerprint of {len(self.before)} tables checked; {removed} queued hand-offs of the run removed)",
            flush=True,
        )


def drop_queued_hand_offs(event_ids: set[str]) -> int:
    """Remove the fan-out tasks of `event_ids` that still wait in the Redis broker queue."""
    from django.conf import settings

    if not event_ids or not str(getattr(settings, "CELERY_BROKER_URL", "")).startswith("redis"):
        return 0
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", None) or "celery"
    ids = {str(event_id) for event_id in event_ids}
    doomed = [
        raw
        for raw, queued_ids in _queued_first_args(client, queue, FAN_OUT_TASK)
        if isinstance(queued_ids, list) and not ids.isdisjoint(str(event_id) for event_id in queued_ids)
    ]
    return remove_queued(client, queue, doomed)


def remove_queued(client, queue: str, doomed: list[bytes]) -> int:
    """Remove these messages (raw, as read) from the Redis list `queue`, the others kept in their
    order; returns how many were removed. One rewrite of the list in a transaction, retried when the
    list changes meanwhile (a worker takes a message, a producer adds one). An LREM per message scans
    the whole list each time: the load benchmark's 50 000 hand-offs took five minutes that way."""
    if not doomed:
        return 0
    import redis

    while True:
        with client.pipeline() as pipe:
            try:
                pipe.watch(queue)
                left = Counter(doomed)
                kept = []
                for raw in pipe.lrange(queue, 0, -1):
                    if left[raw] > 0:
                        left[raw] -= 1
                    else:
                        kept.append(raw)
                pipe.multi()
                pipe.delete(queue)
                if kept:
                    pipe.rpush(queue, *kept)
                pipe.execute()
            except redis.WatchError:
                continue
        return len(doomed) - left.total()


FAN_OUT_TASK = "apps.core.tasks.fan_out_batch"


def drop_stale_hand_offs() -> int:
    """Remove the queued fan-out tasks none of whose events still waits in the outbox (dispatched or
    deleted since): a worker would take each one and find nothing to do. Benchmarks that run without
    a worker and delete their own data leave such tasks behind (the console benchmark's visitor
    messages, for one); an end-to-end figure measured behind them would count their time.
    Returns how many were removed."""
    from django.conf import settings

    from apps.core.models import OutboxEvent

    if not str(getattr(settings, "CELERY_BROKER_URL", "")).startswith("redis"):
        return 0
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", None) or "celery"
    queued = [
        (raw, [str(event_id) for event_id in ids])
        for raw, ids in _queued_first_args(client, queue, FAN_OUT_TASK)
        if isinstance(ids, list)
    ]
    all_ids = {event_id for _, ids in queued for event_id in ids}
    waiting: set[str] = set()
    chunk = sorted(all_ids)
    for start in range(0, len(chunk), 1000):
        rows = OutboxEvent.objects.filter(pk__in=chunk[start : start + 1000], dispatched_at__isnull=True)
        waiting.update(str(pk) for pk in rows.values_list("pk", flat=True))
    return remove_queued(client, queue, [raw for raw, ids in queued if waiting.isdisjoint(ids)])


def drop_queued_work_of_deleted_rows(name: str) -> int:
    """For benchmarks that delete their own widget at the end (channels, console): the fan-out tasks
    of its events and the AI answers of its messages that no worker took are removed from the broker
    too (`drop_stale_hand_offs`, `drop_stale_ai_answers`), so no task for a deleted row is left for
    the next benchmark's worker. Prints and returns how many were removed."""
    removed = drop_stale_hand_offs() + drop_stale_ai_answers()
    print(f"{name}: clean-up: {removed} queued tasks of deleted rows removed from the broker", flush=True)
    return removed


AI_ANSWER_TASK = "apps.ai.tasks.answer_visitor_message"


def drop_stale_ai_answers() -> int:
    """Remove the queued AI answers (`answer_visitor_message`, on the AI queue) whose message no
    longer exists: the benchmarks' visitor messages queue one each when the widget has an AI
    operator, and their clean-up deletes the messages. A later benchmark's AI worker would take
    every one (66 291 had piled up once, from the load benchmark's visitor messages) before its own.
    Returns how many were removed."""
    from django.conf import settings

    from apps.ai.runtime.limits import QUEUE
    from apps.chats.models import Message

    if not str(getattr(settings, "CELERY_BROKER_URL", "")).startswith("redis"):
        return 0
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queue = QUEUE or getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", None) or "celery"
    queued = []
    for raw, message_id in _queued_first_args(client, queue, AI_ANSWER_TASK):
        try:
            queued.append((raw, int(message_id)))
        except (ValueError, TypeError):
            continue
    ids = sorted({message_id for _, message_id in queued})
    present: set[int] = set()
    for start in range(0, len(ids), 1000):
        present.update(Message.objects.filter(pk__in=ids[start : start + 1000]).values_list("pk", flat=True))
    return remove_queued(client, queue, [raw for raw, message_id in queued if message_id not in present])


def _queued_first_args(client, queue: str, task: str) -> list[tuple[bytes, object]]:
    """Each queued message of `task` on `queue` with its first positional argument (messages that
    cannot be read are skipped)."""
    found = []
    for raw in client.lrange(queue, 0, -1):
        try:
            message = json.loads(raw)
            if message["headers"]["task"] != task:
                continue
            body = message["body"]
            if message.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            found.append((raw, json.loads(body)[0][0]))
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    return found

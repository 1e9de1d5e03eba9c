"""Writes on tenancy and tokens. Operator commands and Django admin call these."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from graphlib import TopologicalSorter

from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from apps.audit.services import record, record_change
from apps.core import events
from apps.core.auth import scopes as scope_catalogue
from apps.core.auth import tokens
from apps.core.models import Account, ApiToken, File, OutboxEvent, Widget
from apps.platform.numbers import MAX_ID, parse_int

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    plaintext: str  # shown once; never stored


def user_with_email(email: str):
    """The Django user with this e-mail address, letter case ignored, or None.

    SECURITY: the database's case-insensitive match is wider than an address's case: PostgreSQL's
    UPPER folds some non-ASCII letters onto ASCII ones (dotless `ı` to `I`, long `ſ` to `S`), so
    `alice@gmaıl.com`, an address at a domain anyone may register, would name the user of
    `alice@gmail.com`. Only a user whose address lower-cases to the same string is that user."""
    wanted = email.strip().lower()
    for user in get_user_model().objects.filter(email__iexact=wanted).order_by("pk"):
        if user.email.lower() == wanted:
            return user
    return None


def get_or_create_account(*, email: str, name: str = "") -> Account:
    User = get_user_model()
    email = email.strip().lower()
    user = user_with_email(email)
    if user is None:
        user = User.objects.create_user(username=email, email=email)
        user.set_unusable_password()
        user.save(update_fields=["password"])
    account, _ = Account.objects.get_or_create(user=user, defaults={"name": name})
    return account


@transaction.atomic
def create_widget(*, owner_email: str, name: str = "My widget", enable_api: bool = False) -> Widget:
    """A widget of the owner's account (created when missing). widget.created makes the owner's
    own human agent (a handler of the agents app, in this transaction)."""
    account = get_or_create_account(email=owner_email)
    return add_widget(account=account, name=name, enable_api=enable_api)


# A widget's own fields as the audit log names them (the owning account by its id).
_WIDGET_AUDITED = {"name": "name", "api_enabled": "api_enabled", "account_id": "account"}


def _widget_values(widget: Widget) -> dict:
    return {label: getattr(widget, attname) for attname, label in _WIDGET_AUDITED.items()}


@transaction.atomic
def add_widget(*, account: Account, name: str = "My widget", enable_api: bool = False) -> Widget:
    """A widget of `account` (`create_widget`, Django admin's add page): audited as `widget.created`;
    widget.created makes the owner's own human agent."""
    widget = Widget.objects.create(account=account, name=name or "My widget", api_enabled=enable_api)
    record_change(
        widget=widget,
        action="widget.created",
        target_type="widget",
        target_id=widget.pk,
        before={},
        after=_widget_values(widget),
        always=True,
    )
    events.emit(widget, events.WIDGET_CREATED)
    return widget


@transaction.atomic
def update_widget(*, widget: Widget, changes: dict) -> Widget:
    """Change a widget's own fields (`name`, `api_enabled`, `account`; who may move a widget to
    another account is the caller's check): audited as `widget.changed` in this transaction with the
    request's actor, and the config event emitted (the served settings carry `api_enabled`). A change
    that changes nothing writes nothing."""
    widget = Widget.objects.select_for_update().get(pk=widget.pk)
    before = _widget_values(widget)
    for name in ("name", "api_enabled", "account"):
        if name in changes:
            setattr(widget, name, changes[name])
    after = _widget_values(widget)
    changed = [attname for attname, label in _WIDGET_AUDITED.items() if before[label] != after[label]]
    if not changed:
        return widget
    widget.save(update_fields=changed)
    record_change(
        widget=widget, action="widget.changed", target_type="widget", target_id=widget.pk, before=before, after=after
    )
    events.emit(widget, events.WIDGET_CONFIG_CHANGED)
    return widget


def resolve_widget(id_or_guid: str) -> Widget:
    value = str(id_or_guid).strip()
    try:
        return Widget.objects.get(pk=parse_int(value, minimum=1, maximum=MAX_ID))
    except ValueError:
        pass
    return Widget.objects.get(button_guid=value.lower())


def issuable_widgets(user):
    """The widgets `user` may issue credentials for in Django admin (API tokens, compat bot tokens and
    channel secrets, external operators' signing secrets) and see them of: the widgets of the staff
    user's own account, or every widget with `core.issue_for_any_widget` (a superuser has it)."""
    if user.has_perm("core.issue_for_any_widget"):
        return Widget.objects.all()
    return Widget.objects.filter(account__user=user)


def issuable_accounts(user):
    """The accounts whose rows `user` reaches in Django admin, by the rule of `issuable_widgets`: the
    staff user's own account, or every account with `core.issue_for_any_widget`."""
    if user.has_perm("core.issue_for_any_widget"):
        return Account.objects.all()
    return Account.objects.filter(user=user)


@transaction.atomic
def issue_token(*, widget: Widget, scopes: list[str], name: str = "", expires_in: int | None = None) -> IssuedToken:
    """A new token of `widget`. Only the hash is stored; the plaintext is returned once."""
    unknown = sorted(set(scopes) - scope_catalogue.ALL_SCOPES)
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}")
    if not scopes:
        raise ValueError("a token needs at least one scope")
    if expires_in is not None and expires_in <= 0:
        raise ValueError("expires-in must be a positive number of seconds")
    plaintext, prefix = tokens.generate()
    token = ApiToken.objects.create(
        widget=widget,
        name=name,
        prefix=prefix,
        secret_hash=tokens.hash_token(plaintext),
        scopes=sorted(set(scopes)),
        expires_at=timezone.now() + timedelta(seconds=expires_in) if expires_in else None,
    )
    record(
        widget=widget, action="token.issued", target_type="token", target_id=token.prefix, changes=_token_changes(token)
    )
    return IssuedToken(token=token, plaintext=plaintext)


def _token_changes(token: ApiToken) -> dict:
    """What an issued token is, for the audit log (the secret never: only its public prefix)."""
    return {
        "name": {"from": None, "to": token.name},
        "scopes": {"from": None, "to": token.scopes},
        "expires_at": {"from": None, "to": token.expires_at},
    }


@transaction.atomic
def revoke_token(*, token: ApiToken) -> ApiToken:
    """Takes effect immediately: the next request with it is 401."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record(
            widget=token.widget_id,
            action="token.revoked",
            target_type="token",
            target_id=token.prefix,
            changes={"revoked_at": {"from": None, "to": token.revoked_at}},
        )
    return token


def _cascading_keys(model: type[models.Model]) -> list[tuple[type[models.Model], models.Field]]:
    """Every foreign key to `model` whose rows are deleted with the row they refer to, and its model."""
    return [
        (child, field)
        for child in django_apps.get_models()
        for field in child._meta.concrete_fields
        if field.is_relation and field.related_model is model and field.remote_field.on_delete is models.CASCADE
    ]


def rows_referring_to(obj: models.Model) -> dict[type[models.Model], int]:
    """How many rows of each model refer to `obj` by a foreign key that deletes them with it (models
    without such rows left out), one COUNT a model: what deleting `obj` takes along directly."""
    counts = {}
    for model, field in _cascading_keys(type(obj)):
        if count := model._base_manager.filter(**{field.attname: obj.pk}).count():
            counts[model] = counts.get(model, 0) + count
    return counts


# --- deleting many rows -----------------------------------------------------------------------------


def delete_in_batches(rows: models.QuerySet, *, batch_size: int = 5000, order_by: tuple[str, ...] = ("pk",)) -> int:
    """Delete `rows`, `batch_size` of them a transaction (a savepoint inside the caller's), each batch
    with what cascades from it; the stored bytes of File rows go once the deletion commits. The ORM's
    delete names every row it takes along in one `IN` list per relation: for more rows than
    PostgreSQL takes parameters in one statement (65,535) it fails, so a large set is deleted in
    batches. `rows` is read again for each batch (a row that stops matching before then stays), first
    rows first in `order_by`: where an index of `rows`' filter gives that order, each read stops
    after its batch, and the last read, which finds nothing, is one probe of that index.
    Returns how many rows of `rows`' model went (what cascaded from them not counted)."""
    model = rows.model
    deleted = 0
    while keys := list(rows.order_by(*order_by).values_list("pk", flat=True)[:batch_size]):
        with transaction.atomic():
            batch = model._base_manager.filter(pk__in=keys)
            names = list(batch.values_list("stored", flat=True)) if model is File else []
            deleted += batch.delete()[1].get(model._meta.label, 0)
            if names:  # the bytes go once the rows are gone for good, never before
                transaction.on_commit(partial(_delete_stored_bytes, names))
    return deleted


def delete_with_dependents(obj: models.Model, *, batch_size: int = 5000) -> None:
    """Delete `obj` and every row that cascades from it: the rows that refer to it first, in batches
    (`delete_in_batches`), then `obj` with whatever was written meanwhile."""
    for model, field in _cascading_keys(type(obj)):
        delete_in_batches(model._base_manager.filter(**{field.attname: obj.pk}), batch_size=batch_size)
    type(obj)._base_manager.filter(pk=obj.pk).delete()


def purge_dispatched_events(*, widget_id: int, before: datetime, batch_size: int = 5000) -> int:
    """Delete the widget's outbox events dispatched before `before` that no row refers to any more by
    a key that would be deleted with them (a delivery of the event), in batches. An event not yet
    dispatched is never deleted: the re-drive still owes its fan-out. Returns how many went."""
    # created_at bounds and orders the reads by the widget's index (outbox_widget_created): an event
    # is created before it is dispatched
    rows = OutboxEvent.objects.filter(widget_id=widget_id, created_at__lt=before, dispatched_at__lt=before)
    for model, field in _cascading_keys(OutboxEvent):
        rows = rows.exclude(Exists(model._base_manager.filter(**{field.name: OuterRef("pk")})))
    return delete_in_batches(rows, batch_size=batch_size, order_by=("created_at", "pk"))


# --- deleting a widget ------------------------------------------------------------------------------

# A key that is nulled or left alone when its row's parent goes does not order the deletion.
_NOT_ORDERING = (models.SET_NULL, models.SET_DEFAULT, models.DO_NOTHING)


def _widget_tables() -> list[tuple[type[models.Model], models.Field]]:
    """Every model with a foreign key to Widget, and that key, each before the models of the widget
    its rows refer to (a chat's messages before the chat), so a batch of its rows takes little
    along: the ORM's delete looks up what hangs on a batch with one `IN` list of the batch's keys
    per relation."""
    tables = {}
    for model in django_apps.get_models():
        for field in model._meta.concrete_fields:
            if field.is_relation and field.related_model is Widget:
                tables[model] = field
                break
    order: TopologicalSorter = TopologicalSorter()
    for model in tables:
        order.add(model)
        for field in model._meta.concrete_fields:
            parent = field.related_model if field.is_relation else None
            if parent in tables and parent is not model and field.remote_field.on_delete not in _NOT_ORDERING:
                order.add(parent, model)
    return [(model, tables[model]) for model in order.static_order()]


def delete_widget(*, widget: Widget, batch_size: int = 5000) -> None:
    """Delete the widget and everything of it, table by table (`_widget_tables`), `batch_size` rows a
    transaction (a savepoint inside the caller's: Django admin's delete page runs in one), then the
    widget row with what was written meanwhile. In one cascade the ORM would name every row of a
    large table (a busy widget's outbox events) in one statement, more parameters than PostgreSQL
    takes."""
    for model, field in _widget_tables():
        delete_in_batches(model._base_manager.filter(**{field.attname: widget.pk}), batch_size=batch_size)
    Widget.objects.filter(pk=widget.pk).delete()


def _delete_stored_bytes(names: list[str]) -> None:
    """Delete the stored bytes of deleted File rows (random names, never shared)."""
    storage = File._meta.get_field("stored").storage
    for name in filter(None, names):
        try:
            storage.delete(name)
        except OSError:
            logger.warning("stored bytes of a deleted file not deleted", extra={"stored_name": name})

"""The migration that moves signed calls' keys out of the header keys' reach: a `request_id` key
still inside the 24 h window gets its derived spelling (so a repeat across the upgrade still gets
its first answer); expired rows and header keys stay as they are; backwards restores the old
spelling."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from apps.core import idempotency
from apps.core.errors import InvalidIdempotencyKey
from apps.core.models import IdempotencyKey
from apps.support.services import remembered

BEFORE = [("support", "0003_signed_requests_are_idempotency_keys")]
AFTER = [("support", "0004_signed_request_keys_are_derived")]

pytestmark = pytest.mark.django_db(transaction=True)


def old_key(endpoint: str, request_id: str) -> str:
    return hashlib.sha256(f"{endpoint}\n{request_id}".encode()).hexdigest()


def migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def signed_row(widget, endpoint: str, request_id: str, *, age: timedelta, key: str | None = None) -> IdempotencyKey:
    return IdempotencyKey.objects.create(
        widget=widget,
        key=key or old_key(endpoint, request_id),
        method="POST",
        path=f"/api/v1/ai/assistant/{endpoint}",
        response_status=200,
        answer={"request_id": request_id},
        created_at=timezone.now() - age,
    )


@pytest.fixture
def before():
    migrate(BEFORE)
    try:
        yield
    finally:
        migrate(AFTER)


def test_live_signed_keys_are_derived_and_still_answer_their_repeat(before, widget, other_widget):
    live = signed_row(widget, "tickets", "req-1", age=timedelta(hours=23))
    link = signed_row(other_widget, "account-link", "req-1", age=timedelta(minutes=1))
    migrate(AFTER)
    live.refresh_from_db()
    link.refresh_from_db()
    assert live.key == idempotency.derived_key("tickets", "req-1")
    assert link.key == idempotency.derived_key("account-link", "req-1")
    assert remembered(widget=widget, endpoint="tickets", request_id="req-1") == {"request_id": "req-1"}
    assert remembered(widget=other_widget, endpoint="account-link", request_id="req-1") == {"request_id": "req-1"}


def test_expired_signed_keys_and_header_keys_stay_as_they_are(before, widget):
    expired = signed_row(widget, "tickets", "old", age=timedelta(hours=25))
    header = IdempotencyKey.objects.create(
        widget=widget, key=old_key("tickets", "req-2"), method="POST", path="/api/v1/departments", response_status=201
    )
    migrate(AFTER)
    assert IdempotencyKey.objects.get(pk=expired.pk).key == old_key("tickets", "old")
    assert IdempotencyKey.objects.get(pk=header.pk).key == old_key("tickets", "req-2")


def test_a_key_whose_derived_spelling_is_held_already_gives_way(before, widget):
    stale = signed_row(widget, "tickets", "req-1", age=timedelta(hours=1))
    held = signed_row(
        widget, "tickets", "req-1", age=timedelta(minutes=1), key=idempotency.derived_key("tickets", "req-1")
    )
    migrate(AFTER)
    assert list(IdempotencyKey.objects.filter(widget=widget).values_list("pk", flat=True)) == [held.pk]
    assert not IdempotencyKey.objects.filter(pk=stale.pk).exists()


def test_backwards_restores_the_hex_keys(before, widget):
    rows = [signed_row(widget, "tickets", f"req-{n}", age=timedelta(minutes=n)) for n in range(3)]
    migrate(AFTER)
    assert {IdempotencyKey.objects.get(pk=row.pk).key for row in rows} == {
        idempotency.derived_key("tickets", f"req-{n}") for n in range(3)
    }
    migrate(BEFORE)
    assert {IdempotencyKey.objects.get(pk=row.pk).key for row in rows} == {
        old_key("tickets", f"req-{n}") for n in range(3)
    }


@pytest.mark.parametrize("parts", [("tickets", "r"), ("account-link", "x" * 128), ("account-link/revoke", "")])
def test_no_header_key_can_spell_a_derived_key(parts):
    key = idempotency.derived_key(*parts)
    assert len(key) <= IdempotencyKey._meta.get_field("key").max_length
    with pytest.raises(InvalidIdempotencyKey):
        idempotency.validate_key(key)

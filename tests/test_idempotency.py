"""`X-Service-Idempotency-Key` on operations marked `x-idempotency: required`.

Exercised through the test-only Note create (POST /api/v1/_test/notes). The rules: a missing key
is 400, a malformed one 400, a reuse within 24 h is 409 with `previous` (never a replayed
success), a failed operation does not burn its key, keys are per widget, and of many concurrent
requests with one key exactly one has an effect.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.models import IdempotencyKey, OutboxEvent
from apps.core.tasks import purge_idempotency_keys
from tests.support.plugin import ALL, assert_problem
from tests.testapp.models import Note

NOTES = "/api/v1/_test/notes"
KEY_HEADER = "HTTP_X_SERVICE_IDEMPOTENCY_KEY"


def create_note(client, key: str | None, body: dict | None = None):
    headers = {} if key is None else {KEY_HEADER: key}
    return client.post(NOTES, body or {"title": "n"}, format="json", **headers)


def as_wsgi_header(text: str) -> str:
    """What a WSGI server puts in META for a UTF-8 header value: its bytes decoded as latin-1."""
    return text.encode("utf-8").decode("latin-1")


# --- shape of the key ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_missing_key_is_400_and_creates_nothing(api, widget):
    # when
    response = create_note(api(), key=None)

    # then
    assert_problem(response, 400, "idempotency_key_missing")
    assert not Note.objects.exists()
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "key",
    ["k" * 65, "", "two words", "tab\there", "bell\x07", "nul\x00", "del\x7f", " lead", "trail\n"],
    ids=["65-bytes", "empty", "space", "tab", "control", "nul", "del", "leading-space", "newline"],
)
def test_malformed_key_is_400_and_creates_nothing(api, key):
    # when
    response = create_note(api(), key=key)

    # then
    assert_problem(response, 400, "invalid_idempotency_key")
    assert not Note.objects.exists()


@pytest.mark.django_db
def test_multibyte_key_over_64_bytes_is_400(api):
    # given 33 two-byte characters: 33 characters, 66 bytes
    key = as_wsgi_header("й" * 33)

    # when / then
    assert_problem(create_note(api(), key=key), 400, "invalid_idempotency_key")


@pytest.mark.django_db
def test_key_of_exactly_64_bytes_is_accepted(api):
    response = create_note(api(), key="k" * 64)
    assert response.status_code == 201, response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    "key",
    [as_wsgi_header("й" * 32), as_wsgi_header("заказ-№1"), "заказ-№1"],
    ids=["64-bytes-cyrillic-as-sent", "short-cyrillic-as-sent", "short-cyrillic-decoded"],
)
def test_non_ascii_key_within_64_bytes_is_accepted(api, key):
    response = create_note(api(), key=key)
    assert response.status_code == 201, response.content


@pytest.mark.django_db
def test_non_ascii_key_is_remembered(api):
    # given
    client = api()
    key = as_wsgi_header("й" * 32)
    assert create_note(client, key).status_code == 201

    # when / then
    assert_problem(create_note(client, key), 409, "idempotency_key_reused")


# --- reuse -------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_reuse_within_24_hours_is_409_with_the_previous_result(api, widget):
    # given a note created with a key
    client = api()
    first = create_note(client, "order-1", {"title": "first"})
    assert first.status_code == 201
    note_id = first.json()["id"]

    # when the key is sent again, even with another body
    response = create_note(client, "order-1", {"title": "second"})

    # then 409 names the original outcome, and nothing new exists
    body = assert_problem(response, 409, "idempotency_key_reused")
    previous = body["previous"]
    assert previous["status"] == 201
    assert previous["resource_id"] == str(note_id)
    assert datetime.fromisoformat(previous["at"]) <= timezone.now()
    assert "id" not in body and "created_at" not in body
    assert list(Note.objects.filter(widget=widget).values_list("title", flat=True)) == ["first"]


@pytest.mark.django_db
def test_reuse_by_another_token_of_the_same_widget_is_409(api, widget):
    # given
    assert create_note(api(), "shared").status_code == 201

    # when
    response = create_note(api(), "shared")

    # then
    assert_problem(response, 409, "idempotency_key_reused")
    assert Note.objects.filter(widget=widget).count() == 1


@pytest.mark.django_db
def test_key_23_hours_old_is_still_reused(api):
    # given
    client = api()
    assert create_note(client, "k").status_code == 201
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=23))

    # when / then
    assert_problem(create_note(client, "k"), 409, "idempotency_key_reused")
    assert Note.objects.count() == 1


@pytest.mark.django_db
def test_key_older_than_24_hours_can_be_used_again(api, widget):
    # given a key claimed just over 24 h ago
    client = api()
    assert create_note(client, "k").status_code == 201
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=24, minutes=1))

    # when
    response = create_note(client, "k")

    # then it acts again, and the key now dates from this use
    assert response.status_code == 201, response.content
    assert Note.objects.filter(widget=widget).count() == 2
    row = IdempotencyKey.objects.get(widget=widget, key="k")
    assert row.resource_id == str(response.json()["id"])
    assert row.created_at > timezone.now() - timedelta(hours=1)


@pytest.mark.django_db
def test_failed_validation_does_not_burn_the_key(api, widget):
    # given a create refused with 422
    client = api()
    assert_problem(create_note(client, "retry-me", {"title": ""}), 422, "validation_failed")
    assert not IdempotencyKey.objects.exists()

    # when the client fixes the body and retries with the same key
    response = create_note(client, "retry-me", {"title": "fixed"})

    # then
    assert response.status_code == 201, response.content
    assert list(Note.objects.values_list("title", flat=True)) == ["fixed"]


@pytest.mark.django_db
def test_refused_scope_does_not_burn_the_key(api, widget):
    # given a create refused with 403 before the action runs
    assert_problem(create_note(api(scopes=["chats:read"]), "k"), 403, "missing_scope")

    # when / then
    assert create_note(api(), "k").status_code == 201


@pytest.mark.django_db
def test_keys_are_scoped_per_widget(api, widget, other_widget):
    # when two widgets use the same key
    mine = create_note(api(w=widget), "same-key")
    theirs = create_note(api(w=other_widget), "same-key")

    # then both act
    assert mine.status_code == 201, mine.content
    assert theirs.status_code == 201, theirs.content
    assert Note.objects.filter(widget=widget).count() == 1
    assert Note.objects.filter(widget=other_widget).count() == 1


# --- purge ---------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_purge_removes_keys_older_than_24_hours_and_keeps_newer(widget, other_widget):
    # given keys of several ages
    now = timezone.now()
    ages = {"old": timedelta(hours=24, seconds=1), "ancient": timedelta(days=9), "recent": timedelta(hours=23)}
    for key, age in ages.items():
        IdempotencyKey.objects.create(widget=widget, key=key, method="POST", path=NOTES, created_at=now - age)
    IdempotencyKey.objects.create(widget=other_widget, key="fresh", method="POST", path=NOTES)

    # when the beat task runs
    deleted = purge_idempotency_keys()

    # then
    assert deleted == 2
    assert set(IdempotencyKey.objects.values_list("key", flat=True)) == {"recent", "fresh"}


# --- concurrency ----------------------------------------------------------------------------------------------

RACERS = 50


def race_one_key(plaintext: str, key: str) -> list[tuple[int, str | None]]:
    """RACERS threads, each with its own client and connection, POST the same key at once."""
    barrier = threading.Barrier(RACERS)
    results: list[tuple[int, str | None]] = []
    lock = threading.Lock()

    def racer():
        try:
            client = APIClient()
            client.raise_request_exception = False
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
            barrier.wait(timeout=60)
            response = client.post(NOTES, {"title": "x", "slow": 0.2}, format="json", **{KEY_HEADER: key})
            outcome = (response.status_code, response.json().get("code") if response.status_code >= 400 else None)
        except Exception as exc:  # reported in the results, where the assertion shows it
            barrier.abort()
            outcome = (0, f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=racer) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a racer hung"
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_have_exactly_one_effect(widget, make_token):
    """Real threads on PostgreSQL: the losers wait on the unique index until the winner commits."""
    # given one token and one key shared by 50 concurrent clients
    plaintext = make_token(widget, ALL)

    # when they all POST at once while the winner holds its transaction open
    results = race_one_key(plaintext, "race-key")

    # then one 201, every other answer 409 idempotency_key_reused (no 500), one note, one event
    assert len(results) == RACERS
    assert Counter(results) == {(201, None): 1, (409, "idempotency_key_reused"): RACERS - 1}
    assert Note.objects.filter(widget=widget).count() == 1
    assert OutboxEvent.objects.filter(widget=widget).count() == 1
    assert IdempotencyKey.objects.filter(widget=widget, key="race-key").count() == 1


EMBEDDED_RACE = r"""
import json, sys
from django.conf import settings
settings.DATABASES["default"]["NAME"] = sys.argv[1]
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from apps.core import services
from apps.core.models import IdempotencyKey, OutboxEvent
from tests.support.factories import WidgetFactory
from tests.support.plugin import ALL
from tests.testapp.models import Note
from tests.test_idempotency import race_one_key
widget = WidgetFactory()
plaintext = services.issue_token(widget=widget, scopes=ALL).plaintext
results = race_one_key(plaintext, "race-key")
print(json.dumps({
    "vendor": django.db.connection.vendor,
    "results": results,
    "notes": Note.objects.filter(widget=widget).count(),
    "events": OutboxEvent.objects.filter(widget=widget).count(),
    "keys": IdempotencyKey.objects.filter(widget=widget).count(),
}))
"""


@pytest.mark.embedded
def test_concurrent_requests_with_one_key_have_exactly_one_effect_on_the_embedded_default(tmp_path):
    """The same race on the embedded default: SQLite in a file, IMMEDIATE transactions, WAL.

    Run in a child process on a fresh, migrated database file: the test database pytest-django
    makes for SQLite is in memory with a shared cache, where a second writer gets "database table
    is locked" at once instead of waiting, which the deployed file database never does. The child
    gets neither DATABASE_URL nor REDIS_URL; the suite on the embedded default runs it.
    """
    # given a child environment of the embedded default
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"

    # when 50 threads in it POST one key at once
    done = subprocess.run(
        [sys.executable, "-c", EMBEDDED_RACE, str(tmp_path / "embedded.sqlite3")],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    # then exactly one acted and every other answer is 409
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["vendor"] == "sqlite"
    results = [tuple(result) for result in outcome["results"]]
    assert Counter(results) == {(201, None): 1, (409, "idempotency_key_reused"): RACERS - 1}, done.stderr[-3000:]
    assert (outcome["notes"], outcome["events"], outcome["keys"]) == (1, 1, 1)


# --- deferred claims (slow outside work before the side effect) ------------------------------------------


def test_deferred_action_claims_the_key_around_its_side_effect(api, widget):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.chats.models import File

    client = api(scopes=["files:write"])

    def upload(key):
        return client.post(
            "/api/v1/files",
            {"file": SimpleUploadedFile("a.txt", b"hello", content_type="text/plain")},
            format="multipart",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY=key,
        )

    first = upload("deferred-1")
    assert first.status_code == 201
    again = upload("deferred-1")
    assert again.status_code == 409 and again.json()["previous"]["resource_id"] == str(first.json()["id"])
    assert File.objects.filter(widget=widget).count() == 1


def test_deferred_action_failing_before_its_claim_does_not_burn_the_key(api, widget):
    client = api(scopes=["files:write"])
    refused = client.post(
        "/api/v1/files", {"url": "https://10.0.0.1/x"}, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="d-2"
    )
    assert refused.status_code == 422
    from apps.core.models import IdempotencyKey

    assert not IdempotencyKey.objects.filter(key="d-2").exists()

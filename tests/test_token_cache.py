"""The API tokens a process keeps (apps.core.auth.token_cache): a kept copy answers without a
database query only while Redis says it is current, and every way a token or its widget changes
makes the next request read the rows again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core import services
from apps.core.auth import token_cache
from apps.core.models import ApiToken, Widget
from apps.core.testing.plugin import assert_problem

pytestmark = pytest.mark.redis

NOTES = "/api/v1/_test/notes"


def token_reads(queries) -> int:
    return sum(1 for q in queries if 'FROM "core_apitoken"' in q["sql"] and q["sql"].lstrip().startswith("SELECT"))


def get(client, plaintext):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return response, token_reads(queries.captured_queries)


@pytest.fixture
def issued(widget):
    return services.issue_token(widget=widget, scopes=["chats:read", "chats:write"])


def test_a_kept_token_answers_without_reading_its_rows_and_consumes_one_unit_a_request(client, issued):
    first, first_reads = get(client, issued.plaintext)
    second, second_reads = get(client, issued.plaintext)

    assert first.status_code == second.status_code == 200
    assert (first_reads, second_reads) == (1, 0)
    remaining = int(first["X-RateLimit-Remaining"])
    assert int(second["X-RateLimit-Remaining"]) == remaining - 1
    assert second.json() == first.json()


@pytest.mark.parametrize("limit", [600, 0], ids=["budgeted", "unlimited"])
def test_revoking_a_kept_token_refuses_the_next_request(client, issued, settings, limit):
    settings.API_RATE_LIMIT_PER_MINUTE = limit  # unlimited: the check is a GET of its own
    get(client, issued.plaintext)
    assert get(client, issued.plaintext)[1] == 0

    services.revoke_token(token=ApiToken.objects.get(pk=issued.token.pk))
    response, reads = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")
    assert reads == 1
    assert token_cache.get(issued.token.prefix) is None


def test_scopes_changed_by_a_queryset_update_apply_to_the_next_request(client, issued):
    get(client, issued.plaintext)

    ApiToken.objects.filter(pk=issued.token.pk).update(scopes=["chats:write"])
    response, reads = get(client, issued.plaintext)

    assert_problem(response, 403)
    assert reads == 1


@pytest.mark.parametrize("how", ["save", "update"])
def test_the_widget_turning_its_api_off_applies_to_the_next_request(client, issued, widget, how):
    get(client, issued.plaintext)

    if how == "save":
        widget.api_enabled = False
        widget.save()
    else:
        Widget.objects.filter(pk=widget.pk).update(api_enabled=False)
    response, reads = get(client, issued.plaintext)

    assert_problem(response, 403)
    assert reads == 1


@pytest.mark.parametrize("deleted", ["token", "widget"])
def test_a_deleted_token_or_widget_is_refused_at_once(client, issued, widget, deleted):
    get(client, issued.plaintext)

    (
        ApiToken.objects.filter(pk=issued.token.pk) if deleted == "token" else Widget.objects.filter(pk=widget.pk)
    ).delete()
    response, _ = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")


def test_a_lost_generation_reads_the_rows_again(client, issued):
    get(client, issued.plaintext)

    token_cache._client().delete(token_cache.key(issued.token.prefix))  # Redis restarted or flushed
    response, reads = get(client, issued.plaintext)

    assert response.status_code == 200
    assert reads == 1


def test_a_wrong_secret_for_a_kept_prefix_is_refused_and_consumes_nothing(client, issued):
    from apps.core.auth import tokens

    first, _ = get(client, issued.plaintext)
    body = issued.plaintext[: tokens.PREFIX_LENGTH] + "A" * 32
    forged = body + tokens.checksum(body)

    refused, reads = get(client, forged)
    after, after_reads = get(client, issued.plaintext)

    assert_problem(refused, 401, "invalid_token")
    assert reads == 1  # the rows answer a secret the copy does not know
    assert after.status_code == 200 and after_reads == 0  # the copy stayed
    assert int(after["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"]) - 1


def test_a_kept_copy_that_has_expired_reads_the_rows(client, issued):
    get(client, issued.plaintext)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() + timedelta(seconds=30))
    get(client, issued.plaintext)  # kept again, with its expiry

    later = timezone.now() + timedelta(seconds=31)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda: later)
        response, reads = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")
    assert reads == 1


def test_a_copy_is_kept_at_most_the_configured_seconds(client, issued, settings, monkeypatch):
    settings.API_TOKEN_CACHE_SECONDS = 30
    get(client, issued.plaintext)
    kept_at = token_cache.time.monotonic()

    monkeypatch.setattr(token_cache.time, "monotonic", lambda: kept_at + 31)
    _, reads = get(client, issued.plaintext)

    assert reads == 1


def test_nothing_is_kept_when_switched_off(client, issued, settings):
    settings.API_TOKEN_CACHE_SECONDS = 0

    reads = [get(client, issued.plaintext)[1] for _ in range(2)]

    assert reads == [1, 1]
    assert token_cache.get(issued.token.prefix) is None


def test_last_use_is_written_once_a_window_with_a_kept_copy(client, issued):
    def updates(queries):
        return sum(1 for q in queries if q["sql"].startswith('UPDATE "core_apitoken"'))

    with CaptureQueriesContext(connection) as first:
        client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    with CaptureQueriesContext(connection) as second:
        client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")

    assert (updates(first.captured_queries), updates(second.captured_queries)) == (1, 0)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at is not None


def test_a_copy_read_while_a_change_was_uncommitted_is_not_trusted_after_its_commit(
    client, issued, django_capture_on_commit_callbacks
):
    from apps.core.auth.authentication import _TOKEN_COLUMNS, _token_row

    get(client, issued.plaintext)
    prefix = issued.token.prefix
    old_row = _token_row(prefix)
    secret_hash = old_row[_TOKEN_COLUMNS.index("secret_hash")]

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        ApiToken.objects.filter(pk=issued.token.pk).update(revoked_at=timezone.now())
        # another process reads the new generation, then the rows the change has not committed yet
        generation = token_cache.generation(prefix)
        token_cache.keep(prefix, old_row, secret_hash, generation)
    response, reads = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")
    assert reads == 1


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_generation_is_set_again_after_the_write(client, monkeypatch):
    from apps.core.testing.factories import WidgetFactory

    issued = services.issue_token(widget=WidgetFactory(), scopes=["chats:read"])
    order: list[str] = []
    set_new = token_cache._set_new
    monkeypatch.setattr(
        token_cache, "_set_new", lambda prefixes, **kw: (order.append("generation"), set_new(prefixes, **kw))
    )

    def note(execute, sql, params, many, context):
        if sql.startswith('UPDATE "core_apitoken"'):
            order.append("update")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(note):
        services.revoke_token(token=issued.token)

    assert order == ["generation", "update", "generation"]


def test_a_write_is_refused_when_its_generation_cannot_be_set(issued, monkeypatch):
    import redis

    class Down:
        def pipeline(self, **kwargs):
            raise redis.ConnectionError("down")

    monkeypatch.setattr(token_cache, "_client", lambda: Down())

    with pytest.raises(redis.ConnectionError):
        services.revoke_token(token=ApiToken.objects.get(pk=issued.token.pk))

    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None


def test_made_up_tokens_write_nothing_to_redis(client, db):
    from apps.core.auth import tokens

    plaintext, prefix = tokens.generate()

    response, _ = get(client, plaintext)

    assert_problem(response, 401, "invalid_token")
    assert not token_cache._client().exists(token_cache.key(prefix))
    assert token_cache.get(prefix) is None


def test_a_first_generation_is_not_set_over_one_a_write_set_meanwhile(issued):
    prefix = issued.token.prefix
    token_cache._client().delete(token_cache.key(prefix))
    assert token_cache.generation(prefix) is None  # read before the rows

    ApiToken.objects.filter(pk=issued.token.pk).update(scopes=["chats:write"])  # a write meanwhile

    assert token_cache.start(prefix) is None

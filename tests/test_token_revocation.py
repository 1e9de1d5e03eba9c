"""Every API request reads its token and the token's widget (one lookup by the unique prefix), so
every way a token or its widget changes applies to the very next request."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core import services
from apps.core.models import ApiToken, Widget
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

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


def test_each_request_reads_its_token_once_and_consumes_one_unit(client, issued):
    first, first_reads = get(client, issued.plaintext)
    second, second_reads = get(client, issued.plaintext)

    assert first.status_code == second.status_code == 200
    assert (first_reads, second_reads) == (1, 1)
    assert int(second["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"]) - 1
    assert second.json() == first.json()


def test_revoking_a_token_refuses_the_next_request(client, issued):
    assert get(client, issued.plaintext)[0].status_code == 200

    services.revoke_token(token=ApiToken.objects.get(pk=issued.token.pk))
    response, _ = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")


def test_scopes_changed_by_a_queryset_update_apply_to_the_next_request(client, issued):
    get(client, issued.plaintext)

    ApiToken.objects.filter(pk=issued.token.pk).update(scopes=["chats:write"])
    response, _ = get(client, issued.plaintext)

    assert_problem(response, 403, "missing_scope")


@pytest.mark.parametrize("how", ["save", "update"])
def test_the_widget_turning_its_api_off_applies_to_the_next_request(client, issued, widget, how):
    get(client, issued.plaintext)

    if how == "save":
        widget.api_enabled = False
        widget.save()
    else:
        Widget.objects.filter(pk=widget.pk).update(api_enabled=False)
    response, _ = get(client, issued.plaintext)

    assert_problem(response, 403, "api_disabled")


@pytest.mark.parametrize("deleted", ["token", "widget"])
def test_a_deleted_token_or_widget_is_refused_at_once(client, issued, widget, deleted):
    get(client, issued.plaintext)

    (
        ApiToken.objects.filter(pk=issued.token.pk) if deleted == "token" else Widget.objects.filter(pk=widget.pk)
    ).delete()
    response, _ = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")


def test_a_wrong_secret_for_a_known_prefix_is_refused_and_consumes_nothing(client, issued):
    from apps.core.auth import tokens

    first, _ = get(client, issued.plaintext)
    body = issued.plaintext[: tokens.PREFIX_LENGTH] + "A" * 32
    forged = body + tokens.checksum(body)

    refused, _ = get(client, forged)
    after, _ = get(client, issued.plaintext)

    assert_problem(refused, 401, "invalid_token")
    assert int(after["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"]) - 1


def test_a_token_that_has_expired_is_refused(client, issued):
    get(client, issued.plaintext)
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now() + timedelta(seconds=30))
    assert get(client, issued.plaintext)[0].status_code == 200

    later = timezone.now() + timedelta(seconds=31)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda: later)
        response, _ = get(client, issued.plaintext)

    assert_problem(response, 401, "invalid_token")


def test_last_use_is_written_once_a_window(client, issued):
    def updates(queries):
        return sum(1 for q in queries if q["sql"].startswith('UPDATE "core_apitoken"'))

    with CaptureQueriesContext(connection) as first:
        client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    with CaptureQueriesContext(connection) as second:
        client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")

    assert (updates(first.captured_queries), updates(second.captured_queries)) == (1, 0)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at is not None


def test_a_token_or_widget_write_needs_no_redis(issued, widget, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there

    services.revoke_token(token=ApiToken.objects.get(pk=issued.token.pk))
    Widget.objects.filter(pk=widget.pk).update(api_enabled=False)

    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None

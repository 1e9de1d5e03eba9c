"""Named budgets (apps.core.ratelimit): at most `limit` units per sliding window, all-or-nothing
costs, atomic across processes on both backends (Redis, the database), and the per-token API
budget's headers.

This module imports no model at import time: its child processes import it (to find their entry
point) before they call django.setup().
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import traceback
import uuid

import pytest

from apps.core.errors import RateLimited, exception_handler
from apps.core.ratelimit import Budget
from tests.support.plugin import assert_problem

NOTES = "/api/v1/_test/notes"
RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


def fresh_budget(limit: int, window: float = 60) -> Budget:
    return Budget(f"test-{uuid.uuid4().hex}", limit, window)


# --- one budget ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_budget_admits_its_limit_then_refuses_with_a_retry_after():
    # given
    budget = fresh_budget(5)

    # when
    decisions = [budget.consume() for _ in range(6)]

    # then
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    assert decisions[5].retry_after > 0
    assert decisions[5].remaining == 0


@pytest.mark.django_db
def test_cost_is_admitted_whole():
    # given a budget of 5 with 4 left
    budget = fresh_budget(5)
    assert budget.consume().remaining == 4

    # when 3 units are asked for
    decision = budget.consume(cost=3)

    # then all 3 are taken
    assert decision.allowed
    assert decision.remaining == 1


@pytest.mark.django_db
def test_cost_that_does_not_fit_is_refused_whole_and_records_nothing():
    # given a budget of 5 with 1 left
    budget = fresh_budget(5)
    assert budget.consume(cost=4).remaining == 1

    # when 2 units are asked for
    refused = budget.consume(cost=2)

    # then none is taken: the 1 left is still there
    assert not refused.allowed
    assert refused.remaining == 1
    assert refused.retry_after > 0
    last = budget.consume()
    assert last.allowed and last.remaining == 0


@pytest.mark.django_db
def test_limit_zero_means_unlimited():
    budget = fresh_budget(0)
    assert all(budget.consume(cost=1000).allowed for _ in range(50))


@pytest.mark.django_db
def test_budgets_are_separate_per_key_part():
    # given a budget spent for one key part
    budget = fresh_budget(1)
    assert budget.consume("widget-1").allowed
    assert not budget.consume("widget-1").allowed

    # when / then another key part has its own budget
    assert budget.consume("widget-2").allowed


@pytest.mark.django_db
def test_check_raises_429_carrying_retry_after():
    # given a spent budget
    budget = fresh_budget(1)
    budget.check()

    # when
    with pytest.raises(RateLimited) as caught:
        budget.check()

    # then the error and its rendering carry Retry-After in whole seconds
    assert caught.value.status == 429
    assert int(caught.value.headers["Retry-After"]) >= 1
    response = exception_handler(caught.value, {})
    assert response.status_code == 429
    assert response["Retry-After"] == caught.value.headers["Retry-After"]


# --- names with parts the client chose ---------------------------------------------------------------


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request, settings):
    """Each backend of the budgets in turn: the database (no REDIS_URL), then Redis where there is one."""
    if request.param == "database":
        settings.REDIS_URL = ""
    return request.param


HOSTILE_PARTS = ["a" * 300, "x" * 150 + "\x00" + "y" * 10, "lone \ud800 surrogate"]


@pytest.mark.django_db
@pytest.mark.parametrize("part", HOSTILE_PARTS, ids=["too-long", "nul", "surrogate"])
def test_a_hostile_name_part_is_counted_in_a_bucket_of_its_own(backend, part):
    # given a budget of 2 keyed on a part no store takes as it is (longer than a bucket name holds,
    # NUL, which PostgreSQL refuses in text, or a lone surrogate, which UTF-8 cannot encode)
    budget = fresh_budget(2)

    # when that part spends the budget
    decisions = [budget.consume(part).allowed for _ in range(3)]

    # then it is counted like any other (no database or encoding error), apart from a neighbour
    assert decisions == [True, True, False]
    assert budget.consume(part[:-1] + "z").allowed


def test_a_bucket_name_fits_the_column_that_holds_it():
    from apps.core.models import RateLimitHit
    from apps.core.ratelimit import BUCKET_MAX_LENGTH, bucket_key

    assert RateLimitHit._meta.get_field("bucket").max_length == BUCKET_MAX_LENGTH
    for part in HOSTILE_PARTS:
        key = bucket_key(f"name:{part}")
        assert len(key) <= BUCKET_MAX_LENGTH and "\x00" not in key
        key.encode("utf-8")
    assert bucket_key("name:1.2.3.4") == "name:1.2.3.4"


# --- across processes ----------------------------------------------------------------------------------

PROCESSES = 4
TRIES_PER_PROCESS = 60
LIMIT = 100


def consume_in_child(db_name, redis_url, bucket, start, results) -> None:
    """Entry point of a spawned process: configure, set up Django, then consume at the signal."""
    try:
        from django.conf import settings

        if db_name is not None:
            settings.DATABASES["default"]["NAME"] = db_name
        settings.REDIS_URL = redis_url
        import django

        django.setup()
        from django.db import connections

        from apps.core.ratelimit import consume

        start.wait(timeout=120)
        admitted = sum(consume(bucket, limit=LIMIT, window=60).allowed for _ in range(TRIES_PER_PROCESS))
        connections.close_all()
        results.put((os.getpid(), admitted, None))
    except BaseException:
        results.put((os.getpid(), 0, traceback.format_exc()))


def prepare_sqlite_in_child(db_name, results) -> None:
    """Entry point of a spawned process: migrate the core app into a fresh SQLite file."""
    try:
        from django.conf import settings

        settings.DATABASES["default"]["NAME"] = db_name
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", "core", verbosity=0)
        results.put(None)
    except BaseException:
        results.put(traceback.format_exc())


def consume_from_processes(*, db_name: str | None, redis_url: str, bucket: str) -> list[int]:
    """PROCESSES spawned processes each try TRIES_PER_PROCESS units of one LIMIT/min bucket at once."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=consume_in_child, args=(db_name, redis_url, bucket, start, results))
        for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    errors = [error for _, _, error in outcomes if error]
    assert not errors, errors[0]
    assert len({pid for pid, _, _ in outcomes}) == PROCESSES
    return [admitted for _, admitted, _ in outcomes]


@pytest.fixture
def child_environment(monkeypatch):
    """Spawned processes inherit os.environ: the settings module of the tests, this DATABASE_URL
    and REDIS_URL."""
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "tests.settings")
    return monkeypatch


@pytest.mark.redis
def test_redis_budget_admits_exactly_the_limit_across_processes(settings, child_environment):
    # given one fresh bucket of 100 per minute
    bucket = f"test-processes-{uuid.uuid4().hex}"

    # when 4 processes try 60 units each (240 > 100 within the minute)
    admitted = consume_from_processes(db_name=None, redis_url=settings.REDIS_URL, bucket=bucket)

    # then exactly 100 were admitted in all
    assert sum(admitted) == LIMIT


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_database_budget_admits_exactly_the_limit_across_processes_on_postgres(child_environment):
    """The database backend (no REDIS_URL in the children) on PostgreSQL.

    The children open the test database pytest-django created (its name differs from
    DATABASE_URL's), and the test is transactional so their rows and this test's reads meet.
    """
    from django.db import connection

    from apps.core.models import RateLimitHit

    # given one fresh bucket of 100 per minute
    bucket = f"test-processes-{uuid.uuid4().hex}"

    # when 4 processes try 60 units each
    admitted = consume_from_processes(db_name=connection.settings_dict["NAME"], redis_url="", bucket=bucket)

    # then exactly 100 were admitted and recorded
    assert sum(admitted) == LIMIT
    assert RateLimitHit.objects.filter(bucket=bucket).count() == LIMIT


@pytest.mark.embedded
def test_database_budget_admits_exactly_the_limit_across_processes_on_sqlite(tmp_path, child_environment):
    """The database backend on the embedded default: SQLite in a file, IMMEDIATE transactions.

    pytest-django's SQLite test database lives in this process's memory, which other processes
    cannot open, so the children share a fresh file migrated by one more child. They get no
    DATABASE_URL and no REDIS_URL; the suite on the embedded default runs it.
    """
    # given a migrated database file of the embedded default
    child_environment.delenv("DATABASE_URL", raising=False)
    child_environment.delenv("REDIS_URL", raising=False)
    db_name = str(tmp_path / "embedded.sqlite3")
    ctx = multiprocessing.get_context("spawn")
    prepared = ctx.Queue()
    preparer = ctx.Process(target=prepare_sqlite_in_child, args=(db_name, prepared))
    preparer.start()
    error = prepared.get(timeout=300)
    preparer.join(timeout=60)
    assert error is None, error
    bucket = f"test-processes-{uuid.uuid4().hex}"

    # when 4 processes try 60 units each
    admitted = consume_from_processes(db_name=db_name, redis_url="", bucket=bucket)

    # then exactly 100 were admitted and recorded
    assert sum(admitted) == LIMIT
    with sqlite3.connect(db_name) as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM core_ratelimithit WHERE bucket = ?", [bucket]).fetchone()
    assert rows == LIMIT


# --- the per-token API budget's headers -----------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("scopes", "path", "status"),
    [
        (["chats:read"], NOTES, 200),
        (["stats:read"], NOTES, 403),
        (["chats:read"], f"{NOTES}/999999", 404),
    ],
    ids=["200", "403-missing-scope", "404"],
)
def test_rate_limit_headers_on_every_authenticated_answer(api, settings, scopes, path, status):
    # when
    response = api(scopes=scopes).get(path)

    # then the answer reports the budget, this call included
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    assert response.status_code == status
    assert response["X-RateLimit-Limit"] == str(limit)
    assert response["X-RateLimit-Remaining"] == str(limit - 1)
    assert int(response["X-RateLimit-Reset"]) >= 0


@pytest.mark.django_db
def test_missing_scope_answer_has_rate_limit_headers(api):
    # when a token without the route's scope calls it
    response = api(scopes=["stats:read"]).get(NOTES)

    # then the 403 still reports the budget the call consumed
    assert_problem(response, 403, "missing_scope")
    for name in RATE_HEADERS:
        assert name in response, name


@pytest.mark.django_db
def test_api_disabled_answer_has_rate_limit_headers(api, widget):
    # given
    widget.api_enabled = False
    widget.save()

    # when
    response = api().get(NOTES)

    # then
    assert_problem(response, 403, "api_disabled")
    for name in RATE_HEADERS:
        assert name in response, name


@pytest.mark.django_db
def test_revoked_token_answer_has_no_rate_limit_headers(client, widget):
    # given a revoked token: the caller is not authenticated, so no budget is reported
    from apps.core import services

    issued = services.issue_token(widget=widget, scopes=["chats:read"])
    services.revoke_token(token=issued.token)

    # when
    response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")

    # then
    assert_problem(response, 401, "invalid_token")
    for name in RATE_HEADERS:
        assert name not in response, name


@pytest.mark.django_db
def test_missing_token_answer_has_no_rate_limit_headers(client):
    response = client.get(NOTES)
    assert_problem(response, 401, "not_authenticated")
    for name in RATE_HEADERS:
        assert name not in response, name

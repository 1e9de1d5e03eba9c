"""API tokens: the plaintext is shown once and then exists nowhere (database, logs); the format is
self-checking and random enough.

The token is `cwt_` + 8 base62 public id + 32 base62 secret + 6 base62 checksum (50 characters);
the 12-character prefix `cwt_` + public id may be stored and logged, nothing after it.
"""

from __future__ import annotations

import io
import json
import logging
import math
import string

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from apps.core import services
from apps.core.auth import tokens
from apps.core.logging import JSONFormatter
from tests.support.plugin import ALL, assert_problem

NOTES = "/api/v1/_test/notes"
BOOM = "/api/v1/_test/boom"
IDEM = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "hygiene-1"}
BASE62 = set(string.digits + string.ascii_letters)
PREFIX_LENGTH = 12  # `cwt_` + 8 public characters
READ_ONLY = ["chats:read", "stats:read"]
EXPECTED_STATUSES = [200, 200, 403, 404, 500, 404, 401, 401]


def secret_parts(plaintext: str) -> list[str]:
    """What must never be stored or logged: the whole token, all after the prefix, the bare secret."""
    return [plaintext, plaintext[PREFIX_LENGTH:], plaintext[PREFIX_LENGTH : PREFIX_LENGTH + 32]]


def every_stored_value() -> list[str]:
    """Every concrete field of every row of every table, as text."""
    tables = set(connection.introspection.table_names())
    values = []
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or model._meta.db_table not in tables:
            continue
        fields = model._meta.concrete_fields
        for row in model._base_manager.all():
            values.extend(str(field.value_from_object(row)) for field in fields)
    return values


def exercise_the_api(plaintext: str) -> list[int]:
    """Authenticated success, 403, 404, 500, the token in the path and in the query, a wrong token.

    `plaintext` must grant `chats:read` and `stats:read` and not `chats:write`.
    """
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    statuses = [
        client.get(NOTES).status_code,
        client.get("/api/v1/_test/ping").status_code,
        client.post(NOTES, {"title": "n"}, format="json", **IDEM).status_code,
        client.get(f"{NOTES}/999999").status_code,
        client.get(BOOM).status_code,
        client.get(f"{NOTES}/{plaintext}").status_code,
    ]
    anonymous = APIClient()
    statuses.append(anonymous.get(f"{NOTES}?access_token={plaintext}").status_code)
    statuses.append(anonymous.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {plaintext}x").status_code)
    return statuses


# --- storage -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_plaintext_is_stored_nowhere_in_the_database(widget):
    # given a token issued and used for successful and failing requests
    issued = services.issue_token(widget=widget, scopes=READ_ONLY, name="hygiene")
    exercise_the_api(issued.plaintext)

    # when every value of every table is read back
    stored = every_stored_value()

    # then neither the token nor its secret part is in any of them
    assert stored, "the dump read nothing"
    for secret in secret_parts(issued.plaintext):
        assert not [value for value in stored if secret in value], secret[:PREFIX_LENGTH]


@pytest.mark.django_db
def test_only_a_hash_of_the_token_is_stored(widget):
    # given
    issued = services.issue_token(widget=widget, scopes=["chats:read"])

    # when
    issued.token.refresh_from_db()

    # then the row keeps the public prefix and a hash that is not the token
    assert issued.token.prefix == issued.plaintext[:PREFIX_LENGTH]
    assert issued.token.secret_hash != issued.plaintext
    assert issued.plaintext[PREFIX_LENGTH:] not in issued.token.secret_hash
    assert len(issued.token.secret_hash) == 64


# --- logs ------------------------------------------------------------------------------------------------


@pytest.fixture
def every_log_record(caplog):
    """caplog at DEBUG on the root and on the loggers that do not propagate to it."""
    caplog.set_level(logging.DEBUG)
    isolated = [
        logging.getLogger(name)
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in isolated:
        caplog.set_level(logging.DEBUG, logger=logger.name)
        logger.addHandler(caplog.handler)
    yield caplog
    for logger in isolated:
        logger.removeHandler(caplog.handler)


@pytest.fixture
def console_output():
    """What the JSON console handlers write, at the levels the settings configure.

    The handlers hold the stream they were built with (before any per-test capture), so capsys
    cannot see them; their stream is pointed at a buffer for the test instead.
    """
    buffer = io.StringIO()
    handlers = {
        handler
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler) and isinstance(handler.formatter, JSONFormatter)
    }
    assert handlers, "no JSON console handler is configured"
    previous = {handler: handler.setStream(buffer) for handler in handlers}
    yield buffer
    for handler, stream in previous.items():
        handler.setStream(stream)


@pytest.mark.django_db
def test_plaintext_never_appears_in_log_records(widget, every_log_record):
    # given a token, and SQL logging on (queries are logged at DEBUG)
    plaintext = services.issue_token(widget=widget, scopes=READ_ONLY).plaintext

    # when it is used for success, 403, 404, 500, a query-string token and a wrong token
    with CaptureQueriesContext(connection):
        statuses = exercise_the_api(plaintext)

    # then no record, formatted as the service formats it, carries anything past the prefix
    assert statuses == EXPECTED_STATUSES
    formatter = JSONFormatter()
    output = [formatter.format(record) for record in every_log_record.records]
    assert any(plaintext[:PREFIX_LENGTH] in line for line in output), "the requests were not logged"
    for secret in secret_parts(plaintext):
        leaks = [line for line in output if secret in line]
        assert not leaks, leaks[0].replace(secret, "<SECRET>")


@pytest.mark.django_db
def test_plaintext_never_appears_on_the_json_console(widget, console_output):
    # given
    plaintext = services.issue_token(widget=widget, scopes=READ_ONLY).plaintext

    # when
    statuses = exercise_the_api(plaintext)

    # then the request lines name the prefix at most
    assert statuses == EXPECTED_STATUSES
    text = console_output.getvalue()
    assert plaintext[:PREFIX_LENGTH] in text
    for secret in secret_parts(plaintext):
        assert secret not in text


@pytest.mark.django_db
def test_token_in_query_string_is_refused(client, widget):
    # given
    plaintext = services.issue_token(widget=widget, scopes=ALL).plaintext

    # when
    response = client.get(f"{NOTES}?access_token={plaintext}")

    # then
    assert_problem(response, 401, "token_in_query")


# --- format ----------------------------------------------------------------------------------------------


def test_token_has_the_documented_shape():
    # when
    plaintext, prefix = tokens.generate()

    # then
    assert plaintext.startswith("cwt_")
    assert len(plaintext) == 50
    assert set(plaintext[4:]) <= BASE62
    assert prefix == plaintext[:PREFIX_LENGTH]
    assert tokens.is_well_formed(plaintext)


def test_secret_part_carries_at_least_128_bits():
    # given the secret part: after the 12-character prefix, before the 6-character checksum
    plaintext, _ = tokens.generate()
    secret = plaintext[PREFIX_LENGTH:-6]

    # then 32 base62 characters, about 190 bits
    assert len(secret) == 32
    assert set(secret) <= BASE62
    assert len(secret) * math.log2(62) >= 128


def test_checksum_catches_any_one_character_change():
    # given a valid token
    plaintext, _ = tokens.generate()
    alphabet = sorted(BASE62)

    # when each character after `cwt_` is replaced by every other base62 character in turn
    accepted = []
    for position in range(4, len(plaintext)):
        for replacement in alphabet:
            if replacement == plaintext[position]:
                continue
            changed = plaintext[:position] + replacement + plaintext[position + 1 :]
            if tokens.is_well_formed(changed):
                accepted.append(changed)

    # then no variant passes the offline check
    assert accepted == []


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: "cwx_" + t[4:],
        lambda t: t[:-1],
        lambda t: t + "A",
        lambda t: t.upper() if t != t.upper() else t.lower(),
        lambda t: t[:20] + "-" + t[21:],
    ],
    ids=["other-prefix", "too-short", "too-long", "case-changed", "non-base62"],
)
def test_malformed_variants_are_not_well_formed(variant):
    plaintext, _ = tokens.generate()
    assert not tokens.is_well_formed(variant(plaintext))


def test_a_thousand_tokens_are_distinct_and_well_formed():
    # when
    generated = [tokens.generate() for _ in range(1000)]

    # then
    plaintexts = [plaintext for plaintext, _ in generated]
    assert len(set(plaintexts)) == 1000
    assert all(tokens.is_well_formed(plaintext) for plaintext in plaintexts)
    assert len({prefix for _, prefix in generated}) == 1000


@pytest.mark.django_db
def test_prefix_lookup_finds_exactly_one_token(widget, other_widget):
    # given many tokens on two widgets
    issued = [services.issue_token(widget=w, scopes=["chats:read"]) for w in (widget, other_widget) * 10]

    # then each prefix names one row, and it is that token's
    from apps.core.models import ApiToken

    for one in issued:
        rows = list(ApiToken.objects.filter(prefix=one.plaintext[:PREFIX_LENGTH]))
        assert rows == [one.token]
        assert tokens.matches(one.plaintext, rows[0].secret_hash)


@pytest.mark.django_db
def test_the_database_refuses_a_second_token_with_the_same_prefix(widget):
    # given
    from apps.core.models import ApiToken

    first = services.issue_token(widget=widget, scopes=["chats:read"])

    # when / then
    with pytest.raises(IntegrityError), transaction.atomic():
        ApiToken.objects.create(widget=widget, prefix=first.token.prefix, secret_hash="0" * 64, scopes=["chats:read"])


@pytest.mark.django_db
def test_right_prefix_with_another_secret_is_401(client, widget):
    # given a well-formed token sharing a real token's prefix but not its secret
    issued = services.issue_token(widget=widget, scopes=["chats:read"])
    body = issued.plaintext[:PREFIX_LENGTH] + "A" * 32
    look_alike = body + tokens.checksum(body)
    assert tokens.is_well_formed(look_alike) and look_alike != issued.plaintext

    # when
    response = client.get(NOTES, HTTP_AUTHORIZATION=f"Bearer {look_alike}")

    # then
    assert_problem(response, 401, "invalid_token")


def test_worker_and_beat_log_through_the_scrubbing_json_handler(capsys):
    # given the logging Celery's worker and beat set up on start (its setup_logging signal)
    from celery.signals import setup_logging

    from config.celery import use_django_logging

    assert use_django_logging in [receiver() for _, receiver in setup_logging.receivers]
    use_django_logging()

    # when a worker logger writes a line carrying a visitor session token and a bearer token
    logging.getLogger("celery.worker").warning("GET /ws/visitor/x/?session=cvs_SECRETSECRETSECRET Bearer cwt_ABC")

    # then the console line is JSON and carries neither credential
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "celery.worker" in line)
    assert json.loads(line)["logger"] == "celery.worker"
    assert "SECRETSECRET" not in line and "cwt_ABC" not in line


# --- AI provider keys and signing secrets -------------------------------------------------------

from tests.llm_fake import llm_fake  # noqa: E402,F401 (the fixture)


@pytest.mark.django_db
def test_ai_secrets_never_appear_in_responses_logs_or_the_database(widget, llm_fake, every_log_record):  # noqa: F811
    # given a credential stored through the API, rotated, listed, used for a model list and a detached test
    key, rotated, signing = "sk-hygiene-" + "a" * 24, "sk-hygiene-" + "b" * 24, "sig-hygiene-" + "c" * 20
    fake = llm_fake("openai", api_key=rotated)
    scopes = ["ai:read", "ai:write", "ai:credentials:write"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.issue_token(widget=widget, scopes=scopes).plaintext}")
    bodies = []
    with CaptureQueriesContext(connection):
        created = client.post(
            "/api/v1/ai/credentials",
            {"provider": "openai", "api_key": key, "base_url": fake.base_url, "signing_secret": signing},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="ai-hygiene-1",
        )
        assert created.status_code == 201, created.content
        cid = created.json()["id"]
        bodies.append(created.content)
        rotate = client.patch(
            f"/api/v1/ai/credentials/{cid}",
            {"api_key": rotated},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="ai-hygiene-2",
        )
        bodies.append(rotate.content)
        bodies.append(client.get("/api/v1/ai/credentials").content)
        models = client.get(f"/api/v1/ai/credentials/{cid}/models")
        assert models.status_code == 200, models.content
        bodies.append(models.content)
        assistant = client.post(
            "/api/v1/ai/assistants", {"name": "A"}, format="json", HTTP_X_SERVICE_IDEMPOTENCY_KEY="ai-hygiene-3"
        ).json()
        tested = client.generic(
            "POST",
            f"/api/v1/ai/assistants/{assistant['id']}/test",
            json.dumps({"question": "Hello"}),
            "application/json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="ai-hygiene-4",
        )
        assert tested.status_code == 200, tested.content
        bodies.append(tested.content)
        bound = client.post(
            "/api/v1/ai/assistant/integration",
            {"provider": "openai"},
            format="json",
            HTTP_X_SERVICE_IDEMPOTENCY_KEY="ai-hygiene-5",
        )
        assert bound.status_code == 201, bound.content
        binding_secret = bound.json()["data"]["signing_secret"]
        bodies.append(client.get("/api/v1/ai/assistant/integration").content)

    # then neither key nor secret is in any answer (the binding secret only in its creation answer),
    # any log record, or any stored value
    assert fake.api_requests, "the provider was not called"
    formatter = JSONFormatter()
    output = [formatter.format(record) for record in every_log_record.records]
    stored = every_stored_value()
    for secret in (key, rotated, signing, binding_secret):
        assert not [b for b in bodies if secret.encode() in b], secret[:6]
        leaks = [line for line in output if secret in line]
        assert not leaks, leaks[0].replace(secret, "<SECRET>")
        assert not [v for v in stored if secret in v], secret[:6]

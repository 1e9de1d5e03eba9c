"""Structured JSON logs with the request id; tokens never appear beyond their public prefix."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time

from apps.core.auth.tokens import PREFIX_LENGTH, TOKEN_RE

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class RequestNotes:
    """What the request log line names beyond the request itself: the widget and the token prefix
    the call authenticated with. Opened by the request log middleware for each request and filled by
    authentication (`note_request`); the middleware reads it when the answer is ready. The notes are
    one object per request, so a value noted in a view's thread reaches the middleware's."""

    __slots__ = ("widget_id", "token_prefix")

    def __init__(self) -> None:
        self.widget_id: int | None = None
        self.token_prefix: str | None = None


request_notes_var: contextvars.ContextVar[RequestNotes | None] = contextvars.ContextVar("request_notes", default=None)


def note_request(*, widget=None, token_prefix: str | None = None) -> None:
    """Name the widget (and the API token's prefix) of the current request in its log line; nothing
    outside a request the middleware logs."""
    notes = request_notes_var.get()
    if notes is None:
        return
    if widget is not None:
        notes.widget_id = widget.pk
    if token_prefix is not None:
        notes.token_prefix = token_prefix


_QUERY_SECRET_RE = re.compile(r"(?i)([?&](?:session|access_token|token|api_key)=)[^&\s\"']+")
_BEARER_RE = re.compile(r"(?i)(bearer|visitor)\s+[^\s\"'\\,;]+")
# Routes whose path segment is itself the credential (matched by `tests/test_log_scrub_paths.py`
# against every route of the URL confs with a `token` or `secret` group): the compat bot token and
# Chat API channel secret, an agent invitation, a signed file download.
CREDENTIAL_PATH_PREFIXES = ("/api/compat/legacy/bot/", "/api/compat/legacy/chat/", "/invite/", "/api/files/")
_PATH_SECRET_RE = re.compile("(" + "|".join(re.escape(p) for p in CREDENTIAL_PATH_PREFIXES) + r")[^/\s\"'?#\\]+")
# A Telegram bot token (`<bot id>:<secret>`), which the Bot API takes in the path of every call
# (`/bot<token>/sendMessage`): an outbound call's URL is logged with its path. The bot id stays.
_BOT_TOKEN_RE = re.compile(r"(?:(?<=/bot)|(?<![\w:]))([0-9]{5,15}:)[A-Za-z0-9_-]{30,}")


def scrub(text: str) -> str:
    """Redact every token-shaped string (ours, a Telegram bot token's secret), Authorization
    credential, credential query parameter and credential path segment from a log line."""
    text = TOKEN_RE.sub(lambda m: m.group(0)[:PREFIX_LENGTH] + "…", text)
    text = _PATH_SECRET_RE.sub(lambda m: m.group(1) + "[redacted]", text)
    text = _BOT_TOKEN_RE.sub(lambda m: m.group(1) + "[redacted]", text)
    text = _QUERY_SECRET_RE.sub(lambda m: m.group(1) + "[redacted]", text)
    return _BEARER_RE.sub(lambda m: m.group(1) + " [redacted]", text)


class RequestContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


class JSONFormatter(logging.Formatter):
    _SKIP = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "request_id"}

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": scrub(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key in self._SKIP or key.startswith("_"):
                continue
            if hasattr(value, "path") and hasattr(value, "method"):
                # A request object (django.request puts one in `extra`): never its query string.
                value = f"{value.method} {value.path}"
            payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        # Scrub the whole line last, so no member (nested, or rendered by `default=str`) escapes.
        return scrub(json.dumps(payload, ensure_ascii=False, default=str))

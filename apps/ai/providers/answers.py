"""Every provider answer is read here, defensively, whatever driver asked for it.

Two steps, both fail closed with `UnusableAnswer`, which the drivers' classification turns into a
`ProviderError` handled like any other provider failure (the chain moves on to a backup; the AI
operator hands the chat over and alerts; the detached test answers 502 `provider_failure`):

- `clean_body` (run by the provider transport on every response, so every SDK only ever parses what
  passed it): the body decompressed (`Content-Encoding` gzip or deflate) within the body cap, counted
  in decoded bytes; text decoded by its declared charset (UTF-8 by default) and handed on as UTF-8;
  a JSON body must parse, nest at most MAX_DEPTH levels and be an object; a 2xx JSON object that
  carries an `error` and no result (what some OpenAI-compatible gateways send) is a provider error.
- the readers (`openai_chat`, `anthropic_chat`, `vectors`, `models`, `transcript`): the vendor's
  answer as plain data in, typed values out; a member of the wrong type, missing or null where the
  result must be is unusable, never an exception of its own.
"""

from __future__ import annotations

import codecs
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 64
# A 2xx object with one of these holds a result (chat, embeddings, models, transcription, token).
_RESULT_MEMBERS = frozenset({"choices", "content", "data", "text", "access_token", "tok"})
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
ACCEPT_ENCODING = "gzip, deflate"


class UnusableAnswer(Exception):
    """A provider answer no reader can use. `kind` is the ProviderError kind it becomes (a 2xx
    carrying only an error is the provider's failure: "server_error"); `reason` a fixed phrase."""

    def __init__(self, reason: str, kind: str = "transport") -> None:
        self.reason = reason
        self.kind = kind
        super().__init__(reason)

    @property
    def detail(self) -> str:
        """The ProviderError's detail: one phrase for every answer that is not the vendor's format."""
        return self.reason if self.reason in ("body_too_large", "error_body") else "invalid_response"


# --- the body ------------------------------------------------------------------------------------------


def _decompress(raw: bytes, encodings: list[str], limit: int) -> bytes:
    data = raw
    for encoding in reversed(encodings):  # the last applied is undone first
        if encoding == "identity":
            continue
        wbits = _DECODERS.get(encoding)
        if wbits is None:
            raise UnusableAnswer("unsupported_encoding")
        attempts = (wbits, -zlib.MAX_WBITS) if encoding == "deflate" else (wbits,)  # raw deflate too
        for index, bits in enumerate(attempts):
            decoder = zlib.decompressobj(bits)
            try:
                out = decoder.decompress(data, limit + 1)  # stops there: a bomb never inflates whole
            except zlib.error:
                if index + 1 < len(attempts):
                    continue
                raise UnusableAnswer("bad_encoding") from None
            if len(out) > limit or decoder.unconsumed_tail:
                raise UnusableAnswer("body_too_large")
            data = out
            break
    return data


def _charset(content_type: str) -> str | None:
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower() or None
    return None


def _is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return depth
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise UnusableAnswer("not_json") from None


def clean_body(status: int, headers: Mapping[str, str], raw: bytes, limit: int) -> tuple[bytes, dict[str, str]]:
    """The body an SDK may parse, and the header changes that go with it (see the module text).
    `headers` are the response's (case-insensitive); `raw` is the body as received (at most `limit`
    bytes: the transport capped it). An error status keeps its meaning (a 401 stays an auth
    failure): its body, when unreadable, is dropped instead (a body over the cap never passes)."""
    changes: dict[str, str] = {}
    encodings = [e.strip().lower() for e in headers.get("content-encoding", "").split(",") if e.strip()]
    body = _decompress(raw, encodings, limit) if encodings else raw
    if encodings:
        changes["content-encoding"] = ""
        changes["content-length"] = str(len(body))
    if 200 <= status < 300:
        return _clean_text(status, headers, body, changes)
    try:
        return _clean_text(status, headers, body, changes)
    except UnusableAnswer:
        return b"", {**changes, "content-length": "0"}


def _clean_text(status: int, headers: Mapping[str, str], body: bytes, changes: dict[str, str]):
    content_type = headers.get("content-type", "")
    media = content_type.split(";")[0].strip().lower()
    if not (_is_json(media) or media.startswith("text/")):
        return body, changes  # audio and other binary answers: only the size counts
    charset = _charset(content_type) or "utf-8"
    try:
        codec = codecs.lookup(charset).name
        text = body.decode(codec)
    except (LookupError, UnicodeDecodeError):
        raise UnusableAnswer("bad_charset") from None
    if codec != "utf-8":
        body = text.encode("utf-8")
        changes["content-type"] = f"{media}; charset=utf-8"
        changes["content-length"] = str(len(body))
    if not _is_json(media) or not body.strip():
        return body, changes
    data = _parse(text)
    if _depth(data) > MAX_DEPTH:
        raise UnusableAnswer("too_deep")
    if 200 <= status < 300:
        if not isinstance(data, dict):
            raise UnusableAnswer("not_an_object")
        if "error" in data and not (data.keys() & _RESULT_MEMBERS):
            raise UnusableAnswer("error_body", kind="server_error")
    return body, changes


def json_of(response: Any) -> dict[str, Any]:
    """The JSON object of an HTTP response the transport cleaned (raw SDK responses)."""
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not _is_json(media):
        raise UnusableAnswer("not_json")
    data = _parse(response.content.decode("utf-8", errors="strict") if response.content else "")
    if not isinstance(data, dict):
        raise UnusableAnswer("not_an_object")
    return data


# --- the readers ---------------------------------------------------------------------------------------


def _object(value: Any, reason: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UnusableAnswer(reason)
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(usage: Any, prompt_name: str, completion_name: str) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    counted = {}
    for name, key in ((prompt_name, "prompt_tokens"), (completion_name, "completion_tokens")):
        value = _int(usage.get(name))
        if value is not None:
            counted[key] = value
    if counted:
        counted["total_tokens"] = sum(counted.values())
    return counted


def _model(data: dict[str, Any], asked: str) -> str:
    model = data.get("model")
    return model if isinstance(model, str) and model else asked


def _text_parts(content: Any) -> str:
    """A message's content: a string, null (no text), or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            part = _object(part, "bad_content")
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise UnusableAnswer("bad_content")
                texts.append(part["text"])
        return "".join(texts)
    raise UnusableAnswer("bad_content")


def openai_chat(data: Any, asked_model: str) -> tuple[str, str, dict[str, int]]:
    """(text, model, usage) of an OpenAI-format chat completion (openai, openai_compatible, gigachat)."""
    data = _object(data, "not_an_object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise UnusableAnswer("no_choices")
    message = _object(_object(choices[0], "bad_choice").get("message"), "bad_choice")
    text = _text_parts(message.get("content"))
    return text, _model(data, asked_model), _usage(data.get("usage"), "prompt_tokens", "completion_tokens")


def anthropic_chat(data: Any, asked_model: str) -> tuple[str, str, dict[str, int]]:
    """(text, model, usage) of an Anthropic Messages answer: its text blocks joined."""
    data = _object(data, "not_an_object")
    content = data.get("content")
    if not isinstance(content, list):
        raise UnusableAnswer("bad_content")
    text = _text_parts(content)
    return text, _model(data, asked_model), _usage(data.get("usage"), "input_tokens", "output_tokens")


def vectors(data: Any, count: int) -> list[list[float]]:
    """One vector per input, in input order: `count` finite vectors of one width."""
    items = _object(data, "not_an_object").get("data")
    if not isinstance(items, list) or len(items) != count:
        raise UnusableAnswer("bad_embeddings")
    ordered: list[list[float] | None] = [None] * count
    width = None
    for item in items:
        item = _object(item, "bad_embeddings")
        index, embedding = _int(item.get("index")), item.get("embedding")
        if index is None or index >= count or ordered[index] is not None or not isinstance(embedding, list):
            raise UnusableAnswer("bad_embeddings")
        if not embedding or (width is not None and len(embedding) != width):
            raise UnusableAnswer("bad_embeddings")
        width = len(embedding)
        vector = []
        for value in embedding:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise UnusableAnswer("bad_embeddings")
            vector.append(float(value))
        ordered[index] = vector
    return ordered  # type: ignore[return-value]  (every index filled: count items, no repeats)


def models(data: Any) -> list[dict[str, Any]]:
    """[{"id", "owned_by"?, "display_name"?}] of a models list; entries without a string id skipped."""
    items = _object(data, "not_an_object").get("data")
    if not isinstance(items, list):
        raise UnusableAnswer("bad_models")
    found: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        model_id = item.get("id") or item.get("id_")
        if not isinstance(model_id, str) or not model_id:
            continue
        entry: dict[str, Any] = {"id": model_id}
        for name in ("owned_by", "display_name"):
            if isinstance(item.get(name), str) and item[name]:
                entry[name] = item[name]
        found.append(entry)
    return found


def transcript(data: Any) -> str:
    text = _object(data, "not_an_object").get("text")
    if not isinstance(text, str):
        raise UnusableAnswer("bad_transcript")
    return text

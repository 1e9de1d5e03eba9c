"""Platform safety floors: the checks every machine reply passes before a visitor sees it, whoever
wrote it (the built-in AI operator in `apps.ai.runtime`, an external operator's
`POST /v1/ai/replies` in `apps.external`). One implementation for both paths.

A reply that trips a floor is never posted: the chat is handed to people (`handoff.hand_to_people`,
the hand-over phrase in the visitor's language) with the hand-over reason `floor:<name>`. An
external operator needs only its base scope for that (core-specification: "Replies with empty
content and platform safety floors do not require `responder:escalate`").

The floors, in the order they are checked (`FLOORS`):

- `person_requested`: the visitor's message explicitly asks for a person (a human, a live agent, an
  operator, in any of the seven languages), unless an escalation trigger already handled it;
- `empty`: the reply is empty or only whitespace (the built-in AI's `empty_response` and the
  external `empty_reply` hand-overs keep their own reasons);
- `too_long`: the reply is over MAX_REPLY_CHARACTERS (the message body limit of the API);
- `secret`: the reply holds something that looks like a credential: one of our API tokens (`cwt_`),
  a visitor session token (`cvs_`), a webhook signing secret (`whsec_`), a provider API key
  (`sk-…`, `AIza…`, `AKIA…`, `gh?_…`, `xox?-…`), a private key block, or, verbatim, one of the
  secrets the caller names (the provider keys of the AI's credential chain; the external operator's
  signing secrets, current and previous);
- `system_prompt`: the reply repeats the assistant's system prompt (or a long run of it) verbatim
  (whitespace and case aside): a prompt-extraction answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from apps.core.auth.tokens import TOKEN_PREFIX

PERSON_REQUESTED = "person_requested"
EMPTY = "empty"
TOO_LONG = "too_long"
SECRET = "secret"  # noqa: S105 (a floor's name)
SYSTEM_PROMPT = "system_prompt"
FLOORS = (PERSON_REQUESTED, EMPTY, TOO_LONG, SECRET, SYSTEM_PROMPT)
REASON_PREFIX = "floor:"

MAX_REPLY_CHARACTERS = 65536  # the body limit of a message (the API's `body`, `content`)
# A system prompt shorter than this is not checked (a one-line prompt is a common phrase); a longer
# one counts as repeated when a run of PROMPT_RUN characters of it appears in the reply.
PROMPT_MIN = 40
PROMPT_RUN = 120
# Known secrets shorter than this are not matched (they would match ordinary words).
KNOWN_SECRET_MIN = 12

_SECRET_PATTERNS = [
    re.compile(rf"\b{TOKEN_PREFIX}[0-9A-Za-z]{{16,}}"),  # an API token, whole or most of it
    re.compile(r"\bcvs_[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bwhsec_[A-Za-z0-9+/=]{16,}"),
    re.compile(r"\bsk-(?:proj-|ant-|or-)?[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
]

# The visitor explicitly asks for a person. Casefolded substrings of the message.
_PERSON_PHRASES = {
    "en": (
        "talk to a human",
        "talk to a person",
        "talk to a real person",
        "speak to a human",
        "speak to a person",
        "speak to a real person",
        "speak with a human",
        "speak with a person",
        "talk with a human",
        "talk with a person",
        "real person",
        "human agent",
        "live agent",
        "live person",
        "human operator",
        "connect me to an operator",
        "connect me with an operator",
        "talk to an operator",
        "speak to an operator",
        "talk to an agent",
        "speak to an agent",
    ),
    "ru": (
        "живой человек",
        "живым человеком",
        "живого человека",
        "живой оператор",
        "живым оператором",
        "позовите оператора",
        "позови оператора",
        "соедините с оператором",
        "позовите человека",
        "хочу оператора",
        "нужен оператор",
        "переключите на оператора",
    ),
    "de": (
        "echter mensch",
        "echten menschen",
        "mit einem menschen",
        "mit einem mitarbeiter sprechen",
        "mit einem menschen sprechen",
        "menschlichen mitarbeiter",
    ),
    "es": (
        "persona real",
        "hablar con una persona",
        "hablar con un humano",
        "hablar con un agente",
        "agente humano",
        "operador humano",
    ),
    "el": ("πραγματικό άνθρωπο", "με άνθρωπο", "με έναν άνθρωπο", "με εκπρόσωπο"),
    "ar": ("موظف بشري", "شخص حقيقي", "التحدث مع إنسان", "التحدث مع موظف", "أريد التحدث مع شخص"),
    "zh": ("人工客服", "转人工", "真人客服", "找人工", "真人"),
}
_PERSON = tuple(phrase.casefold() for group in _PERSON_PHRASES.values() for phrase in group)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def visitor_asks_for_person(question: str) -> bool:
    folded = _squash(question)
    return bool(folded) and any(phrase in folded for phrase in _PERSON)


def leaks_secret(text: str, known_secrets: Iterable[str] = ()) -> bool:
    if any(pattern.search(text) for pattern in _SECRET_PATTERNS):
        return True
    return any(secret and len(secret) >= KNOWN_SECRET_MIN and secret in text for secret in known_secrets)


def repeats_system_prompt(text: str, system_prompt: str) -> bool:
    prompt = _squash(system_prompt or "")
    if len(prompt) < PROMPT_MIN:
        return False
    reply = _squash(text)
    if prompt in reply:
        return True
    if len(prompt) <= PROMPT_RUN:
        return False
    step = PROMPT_RUN // 2
    return any(prompt[i : i + PROMPT_RUN] in reply for i in range(0, len(prompt) - PROMPT_RUN + 1, step))


def check_reply(
    text: str,
    *,
    question: str = "",
    known_secrets: Iterable[str] = (),
    system_prompt: str = "",
    check_person: bool = True,
) -> str | None:
    """The first floor `text` (a machine's reply to the visitor's `question`) trips, or None when it
    may be posted. `check_person=False` when the pipeline already escalated the question (a
    trigger) or the caller checked it before asking the provider."""
    if check_person and visitor_asks_for_person(question):
        return PERSON_REQUESTED
    if not (text or "").strip():
        return EMPTY
    if len(text) > MAX_REPLY_CHARACTERS:
        return TOO_LONG
    if leaks_secret(text, known_secrets):
        return SECRET
    if repeats_system_prompt(text, system_prompt):
        return SYSTEM_PROMPT
    return None


def reason(floor: str) -> str:
    """The hand-over reason of a floor (chat.awaiting_human's `reason`, the demand signal's)."""
    return REASON_PREFIX + floor

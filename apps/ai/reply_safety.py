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
  (`sk-…`, `AIza…`, `AKIA…`, `gh?_…`, `xox?-…`), a private key block, or one of the secrets the
  caller names (the provider keys of the AI's credential chain; the external operator's signing
  secrets, current and previous), whole or a half of it;
- `system_prompt`: the reply repeats the assistant's system prompt, or an excerpt of it of
  PROMPT_LEAK_CHARS letters and digits: a prompt-extraction answer. A shorter excerpt counts too
  when it carries what makes a prompt worth extracting (`repeats_prompt_token`): a code-like token
  of the prompt (letters with digits, or an underscore: `ZX81-Q`, `staff_only`) anywhere in the
  reply, or a name-like one (a capitalised or mixed-case word) inside EXCERPT_CHARS letters shared
  with the prompt; a token the visitor's question or the knowledge the answer was given holds is
  no secret of the prompt, and a code the assistant should give out belongs in the knowledge base.

Both comparisons see through disguise. Texts are compared as a skeleton (`skeleton`: NFKC, the
look-alike letters of other scripts, small capitals and regional indicator letters folded to Latin,
case folded, everything but letters and digits dropped, so letter spacing, zero-width and format
characters, soft hyphens, line breaks and fullwidth forms change nothing), overlap is counted in
shingles of SHINGLE letters (an excerpt or a paraphrase with the words in place still matches), and
the reply is also read reversed, upside down, in rot13, in leetspeak, base64- and hex-decoded,
percent-decoded and with its HTML character references resolved (`_readings`); for the system
prompt each reading is also taken as only its words that are words of the prompt, in order and
backwards (a prompt read out one numbered word a line, or with filler words between). Key patterns
run on a lighter normalisation (NFKC, look-alikes and dashes folded, invisible characters dropped,
letter-spaced runs joined) with case-insensitive prefixes, over the same readings.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from collections.abc import Iterable, Iterator
from urllib.parse import unquote

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
# one counts as repeated when the reply holds PROMPT_LEAK_CHARS letters and digits of it (as
# shingles), or most of it when it is shorter than that.
PROMPT_MIN = 40
PROMPT_LEAK_CHARS = 60
SHINGLE = 12
# A prompt token worth extracting is at least this long (letters and digits); a name-like one counts
# when the reply shares this many letters and digits of the prompt (as shingles) around it.
TOKEN_MIN = 6
EXCERPT_CHARS = 30
# Known secrets shorter than this are not matched (they would match ordinary words); a longer one
# counts as leaked when half of it appears (the skeletons of both).
KNOWN_SECRET_MIN = 12
# Readings beyond the text itself are taken of at most this many characters (a reply is at most
# MAX_REPLY_CHARACTERS; the check stays linear in it).
_DECODE_LIMIT = MAX_REPLY_CHARACTERS

_SECRET_PATTERNS = [
    re.compile(rf"(?i:\b{TOKEN_PREFIX})[0-9A-Za-z]{{16,}}"),  # an API token, whole or most of it
    re.compile(r"(?i:\bcvs_)[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i:\bwhsec[_-])[A-Za-z0-9+/=]{16,}"),
    re.compile(r"(?i:\bsk-(?:proj-|ant-|or-)?)[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?i:\bgh[pousr]_)[A-Za-z0-9]{36,}"),
    re.compile(r"(?i:\bxox[abprs]-)[A-Za-z0-9-]{10,}"),
    re.compile(r"(?i)-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
]

# Letters of Cyrillic, Greek and Armenian that look like Latin ones (after NFKC and case folding),
# the part of Unicode's confusables a model's homoglyph disguise uses, the small capitals and
# regional indicator letters of "fancy text" (NFKC keeps both); dashes and minus signs.
_LOOKALIKES = str.maketrans(
    {
        **dict(zip("авсеёһіјӏкмнорԛѕтухԝьгԁ", "abceehijlkmhopqstyxwbrd", strict=True)),  # Cyrillic
        **dict(zip("αβεηικνορτυχζμ", "abeniknoptuxzu", strict=True)),  # Greek
        **dict(zip("օսհոց", "ouhng", strict=True)),  # Armenian
        **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnopqrstuvwyz", strict=True)),  # small capitals
        **{chr(0x1F1E6 + i): chr(ord("a") + i) for i in range(26)},  # regional indicator letters
        **dict.fromkeys("‐‑‒–—―−﹘﹣－⁃", "-"),
    }
)
_INVISIBLE = {"Cf", "Cc", "Cs", "Co", "Cn", "Mn", "Me"}
_SPACED = re.compile(r"(?:(?<=\s)|^)(?:\S[ \t\u00a0]){6,}\S(?=\s|$)")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9A-Fa-f]{2}[ :,-]?){8,}")
# Digits and signs that stand for letters in leetspeak.
_LEET = str.maketrans("4310$7@5", "aeiostas")
# Upside-down text: the turned letters (and the Latin letters that stand for each other turned),
# read after the text is reversed.
_TURNED = "ɐɔǝɟƃɥᴉɾʞɯɹʇʌʍʎ"
_UPSIDE_DOWN = str.maketrans(_TURNED + "qpdbnu", "acefghijkmrtvwy" + "bdpqun")
_WORD_SPLIT = re.compile(r"[\W_]+")
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


def _light(text: str) -> str:
    """NFKC, look-alikes and dashes folded, invisible characters dropped, letter-spaced runs joined:
    what the key patterns read (their separators and prefixes stay)."""
    folded = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    kept = "".join(ch for ch in folded if unicodedata.category(ch) not in _INVISIBLE or ch in "\n\t")
    return _SPACED.sub(lambda m: m.group(0)[::2], kept)


def skeleton(text: str) -> str:
    """The letters and digits of `text`, NFKC-normalised, look-alikes folded to Latin, case folded."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = unicodedata.normalize("NFKC", folded).translate(_LOOKALIKES)
    return "".join(ch for ch in folded if ch.isalnum())


def _base64_decodings(text: str) -> Iterator[str]:
    """Every base64 (standard or URL-safe) run of `text`, also when wrapped over lines or glued to
    a word before it (each of the four alignments is tried), decoded as UTF-8 with the rest dropped."""
    sources = (text, re.sub(r"\s+", "", text))
    for run in {m.group(0) for source in sources for m in _BASE64_RUN.finditer(source)}:
        for start in range(4):
            chunk = run[start:].rstrip("=")
            chunk = chunk[: len(chunk) - len(chunk) % 4] if len(chunk) % 4 == 1 else chunk
            padded = chunk + "=" * (-len(chunk) % 4)
            altchars = b"-_" if ("-" in chunk or "_" in chunk) else None
            try:
                raw = base64.b64decode(padded, altchars=altchars, validate=False)
            except (binascii.Error, ValueError):
                continue
            decoded = raw.decode("utf-8", "ignore")
            if sum(ch.isprintable() for ch in decoded) >= 0.8 * max(1, len(decoded)):
                yield decoded


def _hex_decodings(text: str) -> Iterator[str]:
    """Every run of hex byte pairs of `text` (glued, or parted by spaces, colons, commas or dashes),
    decoded as UTF-8 when it reads as text."""
    for run in {m.group(0) for m in _HEX_RUN.finditer(text)}:
        digits = re.sub(r"[^0-9A-Fa-f]", "", run)
        decoded = bytes.fromhex(digits[: len(digits) - len(digits) % 2]).decode("utf-8", "ignore")
        if decoded and sum(ch.isprintable() or ch.isspace() for ch in decoded) >= 0.8 * len(decoded):
            yield decoded


def _readings(text: str) -> list[str]:
    """The text and what it says read reversed, upside down, in rot13, in leetspeak, base64- and
    hex-decoded, percent-decoded and with its HTML character references resolved."""
    head = text[:_DECODE_LIMIT]
    readings = [text, head[::-1], codecs.encode(head, "rot13"), head.translate(_LEET)]
    if any(ch in _TURNED for ch in head):
        readings.append(head[::-1].translate(_UPSIDE_DOWN))
    if "%" in head:
        readings.append(unquote(head))
    if "&" in head:
        readings.append(html.unescape(head))
    readings += list(_base64_decodings(head))
    readings += list(_hex_decodings(head))
    return readings


def _shingles(skeleton_text: str) -> set[str]:
    return {skeleton_text[i : i + SHINGLE] for i in range(max(1, len(skeleton_text) - SHINGLE + 1))}


def leaks_secret(text: str, known_secrets: Iterable[str] = ()) -> bool:
    readings = _readings(text)
    if any(pattern.search(_light(reading)) for reading in readings for pattern in _SECRET_PATTERNS):
        return True
    known = [skeleton(secret) for secret in known_secrets if secret and len(secret) >= KNOWN_SECRET_MIN]
    if not known:
        return False
    reply_skeletons = [skeleton(reading) for reading in readings]
    for secret in known:
        part = max(KNOWN_SECRET_MIN, len(secret) // 2)
        halves = {secret[i : i + part] for i in range(len(secret) - part + 1)}
        if any(half in reply for reply in reply_skeletons for half in halves):
            return True
    return False


def _words(text: str) -> list[str]:
    return [word for word in (skeleton(part) for part in _WORD_SPLIT.split(text)) if word]


def _prompt_word_skeletons(reading: str, vocabulary: set[str]) -> Iterator[str]:
    """The reading's words that are words of the prompt, in order and in reverse order, run together:
    a prompt read out one word a line, numbered, with filler words between or backwards."""
    kept = [word for word in _words(reading) if word in vocabulary]
    yield "".join(kept)
    yield "".join(reversed(kept))


def _reply_skeletons(text: str, system_prompt: str) -> list[str]:
    """The skeletons to compare with the prompt, each once, in order: of every reading, and of its
    words that are words of the prompt."""
    vocabulary = set(_words(system_prompt))
    replies: dict[str, None] = {}
    for reading in _readings(text):
        replies.setdefault(skeleton(reading))
        for words in _prompt_word_skeletons(reading, vocabulary):
            replies.setdefault(words)
    return list(replies)


def _covered(prompt: str, prompt_shingles: set[str], reply: str) -> set[int]:
    """The positions of the prompt's letters inside a shingle the reply holds too."""
    common = prompt_shingles & _shingles(reply)
    covered: set[int] = set()
    if common:
        for i in range(max(1, len(prompt) - SHINGLE + 1)):
            if prompt[i : i + SHINGLE] in common:
                covered.update(range(i, i + SHINGLE))
    return covered


def repeats_system_prompt(text: str, system_prompt: str) -> bool:
    if len(_squash(system_prompt or "")) < PROMPT_MIN:
        return False
    prompt = skeleton(system_prompt)
    if not prompt:
        return False
    needed = min(PROMPT_LEAK_CHARS, int(len(prompt) * 0.8))
    prompt_shingles = _shingles(prompt)
    for reply in _reply_skeletons(text, system_prompt):
        if prompt in reply or len(_covered(prompt, prompt_shingles, reply)) >= needed:
            return True
    return False


_PROMPT_TOKEN = re.compile(r"[\w-]+")


def _is_code_like(token: str) -> bool:
    letters = any(ch.isalpha() for ch in token)
    return ("_" in token.strip("_") and letters) or (letters and any(ch.isdigit() for ch in token))


def _is_name_like(token: str) -> bool:
    word = token.strip("-_")
    return word[:1].isupper() or any(ch.isupper() for ch in word[1:])


def prompt_tokens(system_prompt: str) -> tuple[set[str], set[str]]:
    """(code-like, name-like) tokens of the prompt, as skeletons of at least TOKEN_MIN characters."""
    codes: set[str] = set()
    names: set[str] = set()
    text = system_prompt or ""
    for match in _PROMPT_TOKEN.finditer(text):
        token, folded = match.group(0), skeleton(match.group(0))
        if len(folded) < TOKEN_MIN:
            continue
        if _is_code_like(token):
            codes.add(folded)
        elif _is_name_like(token) and not _starts_sentence(text, match.start(), token):
            names.add(folded)
    return codes, names


def _starts_sentence(text: str, start: int, token: str) -> bool:
    """A capitalised word that opens a sentence is an ordinary word ("Never", "Escalate"); one with
    a capital inside ("McAllister", "TeaHouse") is a name wherever it stands."""
    if any(ch.isupper() for ch in token.strip("-_")[1:]):
        return False
    before = text[:start].rstrip()
    return not before or before[-1] in ".!?:;\n\"'«(" or before.endswith(("-", "*", "•"))


def repeats_prompt_token(text: str, system_prompt: str, *, question: str = "", knowledge: Iterable[str] = ()) -> bool:
    """True when the reply carries a code-like token of the prompt, or a name-like one inside an
    excerpt of EXCERPT_CHARS letters of the prompt, that neither the visitor's question nor the
    knowledge the answer was given holds (a short excerpt that carries a code or a name)."""
    codes, names = prompt_tokens(system_prompt)
    if not codes and not names:
        return False
    known = [skeleton(question or "")] + [skeleton(chunk) for chunk in knowledge]
    codes = {token for token in codes if not any(token in part for part in known)}
    names = {token for token in names if not any(token in part for part in known)}
    if not codes and not names:
        return False
    prompt = skeleton(system_prompt)
    prompt_shingles = _shingles(prompt)
    for reply in _reply_skeletons(text, system_prompt):
        if any(token in reply for token in codes):
            return True
        carried = [token for token in names if token in reply]
        if carried and len(_covered(prompt, prompt_shingles, reply)) >= EXCERPT_CHARS:
            return True
    return False


def check_reply(
    text: str,
    *,
    question: str = "",
    known_secrets: Iterable[str] = (),
    system_prompt: str = "",
    knowledge: Iterable[str] = (),
    check_person: bool = True,
) -> str | None:
    """The first floor `text` (a machine's reply to the visitor's `question`) trips, or None when it
    may be posted. `knowledge`: the knowledge-base chunks the answer was given (a prompt token they
    hold is no secret). `check_person=False` when the pipeline already escalated the question (a
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
    if repeats_prompt_token(text, system_prompt, question=question, knowledge=knowledge):
        return SYSTEM_PROMPT
    return None


def reason(floor: str) -> str:
    """The hand-over reason of a floor (chat.awaiting_human's `reason`, the demand signal's)."""
    return REASON_PREFIX + floor

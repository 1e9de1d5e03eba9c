"""The AI turn pipeline shared by the AI operator at work and the detached assistant test: prompt
assembly, the visitor's language, `transform` (the transformation and escalation classifier in
one function) that turns a provider answer into what the visitor is shown, and `check_floors`, the
platform safety floors over that (`floors.check_reply`).

Nothing here calls a provider or writes anything: callers do the provider call between
`assemble_messages` and `transform`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from apps.kb.services import CONTENT_MAX_CHARS as CHUNK_CHARACTERS

from . import phrases, reply_safety

HANDOFF_MARKER = "[KEY_TO_OPERATOR]"
# Something that looks like the marker but is not it exactly (brackets lost, spaces, other case):
# the model tried to hand off; we do not trust the form, so the visitor is handed over safely.
_LOOSE_MARKER = re.compile(r"\[?\s*key[\s_-]*to[\s_-]*operator\s*\]?", re.IGNORECASE)
# A model that echoes a role label or wraps the answer in a JSON-ish object.
_ROLE_PREFIX = re.compile(r"^\s*(?:assistant|ассистент|bot|ai)\s*:\s*", re.IGNORECASE)
_ANSWER_FIELD = re.compile(r'^\s*\{\s*"(?:answer|reply|text)"\s*:\s*"(?P<text>(?:[^"\\]|\\.)*)"\s*\}\s*$', re.DOTALL)

SOCIAL = {
    "ru": ("спасибо", "благодарю", "пока", "до свидания", "всего доброго"),
    "en": ("thanks", "thank you", "bye", "goodbye", "cheers"),
    "el": ("ευχαριστώ", "αντίο"),
    "de": ("danke", "tschüss", "auf wiedersehen"),
    "es": ("gracias", "adiós", "hasta luego"),
    "ar": ("شكرا", "شكرًا", "مع السلامة"),
    "zh": ("谢谢", "再见"),
}


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant
    content: str


# The prompt is bounded whatever is stored: each knowledge excerpt at most a chunk's length (chunks
# stored before that cap existed included), the excerpts together at most MAX_KNOWLEDGE_CHARACTERS,
# the visitor's message at most MAX_QUESTION_CHARACTERS (the system prompt, persona and history have
# limits of their own).
MAX_KNOWLEDGE_CHARACTERS = 5 * CHUNK_CHARACTERS
MAX_QUESTION_CHARACTERS = 8000


def _bounded_knowledge(knowledge: list[str]) -> list[str]:
    excerpts, left = [], MAX_KNOWLEDGE_CHARACTERS
    for excerpt in knowledge:
        excerpt = excerpt[: min(CHUNK_CHARACTERS, left)]
        if not excerpt:
            break
        excerpts.append(excerpt)
        left -= len(excerpt)
    return excerpts


PRESENCE_CONTEXT = {
    "online": "A human operator is online now: when the visitor needs one, they can take over.",
    "offline": "No human operator is online now: a hand-over will be answered later, not now.",
    "unknown": "Whether a human operator is online is not known now.",
}


def assemble_messages(
    *,
    system_prompt: str,
    persona: str,
    knowledge: list[str],
    history: list[dict],
    question: str,
    operators_state: str | None = None,
) -> list[Message]:
    """System prompt + persona + (retrieved knowledge) + (presence context: `operators_state`, when
    the widget's `presence_context_enabled`) + the visible history + the visitor's message; the
    knowledge and the message bounded (MAX_KNOWLEDGE_CHARACTERS, MAX_QUESTION_CHARACTERS)."""
    system_parts = [part.strip() for part in (system_prompt, persona) if part and part.strip()]
    knowledge = _bounded_knowledge(knowledge)
    if knowledge:
        system_parts.append("Knowledge base excerpts:\n" + "\n---\n".join(knowledge))
    if operators_state in PRESENCE_CONTEXT:
        system_parts.append(PRESENCE_CONTEXT[operators_state])
    system_parts.append(
        f"If the visitor needs a human operator, answer with exactly {HANDOFF_MARKER} and nothing else."
    )
    messages = [Message("system", "\n\n".join(system_parts))]
    messages += [Message(item["role"], item["content"]) for item in history]
    messages.append(Message("user", question[:MAX_QUESTION_CHARACTERS]))
    return messages


def detect_language(text: str) -> str | None:
    """The language of `text` when its script (or its letters) names one of the seven, else None."""
    counts: dict[str, int] = {}
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("CYRILLIC"):
            lang = "ru"
        elif name.startswith("GREEK"):
            lang = "el"
        elif name.startswith("ARABIC"):
            lang = "ar"
        elif name.startswith("CJK") or name.startswith("HIRAGANA") or name.startswith("KATAKANA"):
            lang = "zh"
        elif name.startswith("LATIN"):
            lang = "latin"
        else:
            continue
        counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return None
    best = max(counts, key=counts.get)
    if best != "latin":
        return best
    lowered = text.lower()
    if any(ch in lowered for ch in "äöüß"):
        return "de"
    if any(ch in lowered for ch in "ñ¿¡") or any(w in lowered.split() for w in ("hola", "gracias", "quiero")):
        return "es"
    return "en"


def matches_trigger(triggers: list[str], text: str) -> str | None:
    """The first escalation trigger found in `text` (Unicode case folding, substring)."""
    folded = text.casefold()
    for trigger in triggers:
        if trigger and trigger.casefold() in folded:
            return trigger
    return None


# Control characters a reply never shows (NUL, which PostgreSQL cannot store, among them) and lone
# surrogates (no encoding can store them): dropped from the provider's answer, also when the model
# wrote them as JSON escapes; tab and line breaks stay.
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, *range(0xD800, 0xE000)])


def _without_controls(text: str) -> str:
    return text.translate(_CONTROLS)


def _json_string(escaped: str) -> str:
    """The text of a JSON string literal's inside (its escapes resolved; any other character, say
    Cyrillic, kept as it is). A malformed escape leaves the text as the model wrote it."""
    try:
        return json.loads(f'"{escaped}"')
    except ValueError:
        return escaped


def _is_social(text: str, locale: str) -> bool:
    words = re.sub(r"[^\w\s]", " ", text.casefold()).split()
    phrase = " ".join(words)
    return bool(phrase) and any(phrase == s or phrase == s.casefold() for s in SOCIAL.get(locale, ()) + SOCIAL["en"])


@dataclass(frozen=True)
class Outcome:
    answer: str
    # answer | social_reply | empty_response | answer_only_recovery | untrusted_handoff_fallback |
    # escalation_outcome
    transformation: str
    classifier: str  # not_needed | unavailable | escalate | no_escalation
    escalation: dict
    outcome: str | None  # None | handover_notice | handover_offline | handover_unknown
    offline_outcome_suppressed: bool


def handover_choice(
    overrides: dict, locale: str, operators_state: str, presence_context_enabled: bool
) -> tuple[str, str, bool]:
    """(phrase text, outcome, offline_outcome_suppressed) of a handover: `handoff_to_human` when a
    person is online, `handover_offline` when none is and presence is read (the widget's
    `offline_outcome_mode`), else `handover_unknown`. The one choice of every handover (the detached
    test, the AI operator at work, an external operator's escalation)."""
    if operators_state == "online":
        return phrases.text_of(overrides, "handoff_to_human", locale), "handover_notice", False
    if operators_state == "offline" and presence_context_enabled:
        return phrases.text_of(overrides, "handover_offline", locale), "handover_offline", False
    suppressed = operators_state == "offline"
    return phrases.text_of(overrides, "handover_unknown", locale), "handover_unknown", suppressed


def transform(
    *,
    question: str,
    answer: str,
    triggers: list[str],
    locale: str,
    operators_state: str,
    presence_context_enabled: bool,
    overrides: dict,
) -> Outcome:
    """From the provider's raw answer to what the visitor sees, and whether the chat goes to people.

    - an escalation trigger in the visitor's message, or the exact marker in the answer: handover
      (`escalation_outcome`, classifier `escalate`); a social message (thanks, bye) answered with the
      marker gets the `social_reply` phrase instead (classifier `no_escalation`);
    - a marker in another form: not trusted as a command, handed over all the same
      (`untrusted_handoff_fallback`);
    - an empty answer: handover (`empty_response`, classifier `unavailable`);
    - an answer wrapped in a role label or a JSON object: the text alone (`answer_only_recovery`);
    - control characters (but tab and line breaks) and lone surrogates are dropped from the answer,
      JSON escapes included;
    - otherwise the answer as it is (`answer`, classifier `not_needed`).
    """

    def handover(transformation: str, classifier: str, reason: str, trigger: str | None = None) -> Outcome:
        text, outcome, suppressed = handover_choice(overrides, locale, operators_state, presence_context_enabled)
        return Outcome(
            answer=text,
            transformation=transformation,
            classifier=classifier,
            escalation={"escalate": True, "reason": reason, "trigger": trigger},
            outcome=outcome,
            offline_outcome_suppressed=suppressed,
        )

    def plain(text: str, transformation: str, classifier: str) -> Outcome:
        return Outcome(
            answer=text,
            transformation=transformation,
            classifier=classifier,
            escalation={"escalate": False, "reason": None, "trigger": None},
            outcome=None,
            offline_outcome_suppressed=False,
        )

    trigger = matches_trigger(triggers, question)
    if trigger is not None:
        return handover("escalation_outcome", "escalate", "trigger", trigger)
    text = _without_controls(answer or "").strip()
    if HANDOFF_MARKER in text:
        if _is_social(question, locale):
            return plain(phrases.text_of(overrides, "social_reply", locale), "social_reply", "no_escalation")
        return handover("escalation_outcome", "escalate", "marker")
    if _LOOSE_MARKER.search(text):
        return handover("untrusted_handoff_fallback", "escalate", "untrusted_marker")
    if not text:
        return handover("empty_response", "unavailable", "empty_response")
    recovered = _ANSWER_FIELD.match(text)
    if recovered:
        inner = _without_controls(_json_string(recovered.group("text"))).strip()
        if inner:
            return plain(inner, "answer_only_recovery", "not_needed")
    stripped = _ROLE_PREFIX.sub("", text, count=1).strip()
    if stripped != text and stripped:
        return plain(stripped, "answer_only_recovery", "not_needed")
    return plain(text, "answer", "not_needed")


def check_floors(
    outcome: Outcome,
    *,
    question: str,
    known_secrets: Iterable[str],
    system_prompt: str,
    locale: str,
    operators_state: str,
    presence_context_enabled: bool,
    overrides: dict,
    knowledge: Iterable[str] = (),
) -> Outcome:
    """`outcome` as the visitor may see it: an answer that trips a platform safety floor
    (`floors.check_reply`: a secret, the system prompt repeated, too long, empty) becomes a
    handover with the reason `floor:<name>` and the handover phrase. An outcome that already hands
    over is left as it is (the visitor's request for a person is checked before the provider is
    asked). The one check of the AI operator at work and the detached test; `known_secrets` are the
    provider keys of the credential chain, `knowledge` the knowledge-base chunks the answer was given."""
    if outcome.escalation["escalate"]:
        return outcome
    floor = reply_safety.check_reply(
        outcome.answer,
        question=question,
        known_secrets=known_secrets,
        system_prompt=system_prompt,
        knowledge=knowledge,
        check_person=False,
    )
    if floor is None:
        return outcome
    text, handover_outcome, suppressed = handover_choice(overrides, locale, operators_state, presence_context_enabled)
    return Outcome(
        answer=text,
        transformation="escalation_outcome",
        classifier="escalate",
        escalation={"escalate": True, "reason": reply_safety.reason(floor), "trigger": None},
        outcome=handover_outcome,
        offline_outcome_suppressed=suppressed,
    )


# --- for the people who take over: the hand-over summary ------------------------------------------------

SUMMARY_LINES = 5
# The instruction in the widget's language: the note is written for that widget's people.
SUMMARY_INSTRUCTIONS = {
    "ru": (
        "Ты передаёшь этот чат оператору-человеку. Кратко перескажи разговор для него: чего хочет "
        "посетитель, что уже ответили, что осталось сделать. Не больше пяти строк, на русском языке, без "
        "вступлений."
    ),
    "en": (
        "You are handing this chat to a human operator. Summarise the conversation for them: what the "
        "visitor wants, what was already answered, what is left to do. At most five lines, in English, no "
        "preamble."
    ),
    "el": (
        "Παραδίδεις αυτή τη συνομιλία σε έναν άνθρωπο χειριστή. Σύνοψε τη συζήτηση γι' αυτόν: τι θέλει ο "
        "επισκέπτης, τι έχει ήδη απαντηθεί, τι μένει να γίνει. Το πολύ πέντε γραμμές, στα ελληνικά, χωρίς "
        "εισαγωγή."
    ),
    "de": (
        "Du übergibst diesen Chat an einen menschlichen Mitarbeiter. Fasse das Gespräch für ihn zusammen: "
        "was der Besucher möchte, was bereits beantwortet wurde, was noch zu tun ist. Höchstens fünf Zeilen, "
        "auf Deutsch, ohne Einleitung."
    ),
    "es": (
        "Estás pasando este chat a un operador humano. Resume la conversación para él: qué quiere el "
        "visitante, qué ya se respondió, qué queda por hacer. Como máximo cinco líneas, en español, sin "
        "preámbulo."
    ),
    "ar": (
        "أنت تحيل هذه المحادثة إلى موظف بشري. لخّص المحادثة له: ماذا يريد الزائر، وما الذي تمت الإجابة "
        "عنه، وما الذي بقي. خمسة أسطر على الأكثر، باللغة العربية، دون مقدمة."
    ),
    "zh": (
        "你正在把这个对话转交给人工客服。请为他总结对话：访客想要什么，已经回答了什么，"
        "还剩下什么要做。最多五行，用中文，不要开场白。"
    ),
}
SUMMARY_ROLES = {
    "ru": {"user": "Посетитель", "assistant": "Оператор"},
    "en": {"user": "Visitor", "assistant": "Operator"},
    "el": {"user": "Επισκέπτης", "assistant": "Χειριστής"},
    "de": {"user": "Besucher", "assistant": "Mitarbeiter"},
    "es": {"user": "Visitante", "assistant": "Operador"},
    "ar": {"user": "الزائر", "assistant": "الموظف"},
    "zh": {"user": "访客", "assistant": "客服"},
}
assert set(SUMMARY_INSTRUCTIONS) == set(SUMMARY_ROLES) == set(phrases.LANGUAGES)


def summary_messages(*, history: list[dict], locale: str) -> list[Message]:
    """The prompt of a hand-over summary: the instruction in `locale` (one of the seven, else
    English) and the conversation as a transcript, one `Role: text` line per message."""
    locale = locale if locale in SUMMARY_INSTRUCTIONS else "en"
    roles = SUMMARY_ROLES[locale]
    transcript = "\n".join(f"{roles.get(item['role'], roles['assistant'])}: {item['content']}" for item in history)
    return [Message("system", SUMMARY_INSTRUCTIONS[locale]), Message("user", transcript[:MAX_QUESTION_CHARACTERS])]


def cut_lines(text: str, limit: int = SUMMARY_LINES) -> str:
    """`text` without blank lines and cut to its first `limit` lines: a model that wrote more than it
    was asked still gives a note people read at a glance."""
    lines = [line.rstrip() for line in _without_controls(text or "").strip().splitlines() if line.strip()]
    return "\n".join(lines[:limit])

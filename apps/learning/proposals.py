"""Asking the provider for a persona/system-prompt patch (a tuning cycle's or a wish's) and reading
its answer. The provider answers a JSON object `{"persona", "system_prompt", "rationale"}`; anything
else is an invalid proposal and changes nothing."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from apps.ai import selectors as ai_selectors
from apps.ai.models import Assistant
from apps.ai.providers import ChatMessage, ProviderError, complete
from apps.core.models import Widget

PERSONA_MAX = 4000  # the assistant's own limits (apps.ai AssistantInput)
SYSTEM_PROMPT_MAX = 20000
RATIONALE_MAX = 2000
DEADLINE_SECONDS = 45.0
MAX_OPERATIONS = 4

_FENCE = re.compile(r"^\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*$", re.DOTALL)

INSTRUCTIONS = (
    "You improve the persona and the system prompt of a website chat assistant. Keep what works, change "
    "only what the material below shows should change, keep the language the texts are written in, and never "
    "add secrets, links or promises the business did not make. Answer with one JSON object and nothing else: "
    '{"persona": "<the whole new persona>", "system_prompt": "<the whole new system prompt>", '
    '"rationale": "<one short paragraph: what you changed and why>"}.'
)


class ProposalFailed(Exception):
    """`reason` is `provider_<kind>` or `invalid_proposal`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Proposal:
    persona: str
    system_prompt: str
    rationale: str


def _current(assistant: Assistant) -> str:
    return (
        f"Current persona:\n<<<\n{assistant.persona}\n>>>\n\n"
        f"Current system prompt:\n<<<\n{assistant.system_prompt}\n>>>"
    )


def tuning_messages(assistant: Assistant, excerpts: dict) -> list[ChatMessage]:
    lines = [_current(assistant), "", "What went wrong recently (visitor = the site's visitor):"]
    for i, chat in enumerate(excerpts["chats"], 1):
        marks = []
        if chat["escalated"]:
            marks.append("handed to a person")
        if chat["rating"] is not None:
            marks.append(
                f"rated {chat['rating']}/5" + (f": {chat['rating_comment']}" if chat["rating_comment"] else "")
            )
        lines.append(f"Chat {i} ({', '.join(marks)}):")
        for m in chat["messages"]:
            role = {"client": "visitor", "ai": "assistant", "agent": "human operator"}.get(m["role"], m["role"])
            lines.append(f"  {role}: {m['text']}")
    if excerpts["unanswered"]:
        lines.append("Questions the assistant could not answer (topic, times asked):")
        for topic in excerpts["unanswered"]:
            lines.append(
                f"  - {topic['topic']} ({topic['count']})" + (f": {topic['sample']}" if topic["sample"] else "")
            )
    return [ChatMessage("system", INSTRUCTIONS), ChatMessage("user", "\n".join(lines))]


def wish_messages(assistant: Assistant, wish_text: str) -> list[ChatMessage]:
    body = f"{_current(assistant)}\n\nThe owner's wish:\n<<<\n{wish_text}\n>>>\nRewrite both texts to fulfil the wish."
    return [ChatMessage("system", INSTRUCTIONS), ChatMessage("user", body)]


def parse(text: str) -> Proposal:
    raw = (text or "").strip()
    fenced = _FENCE.match(raw)
    if fenced:
        raw = fenced.group("body")
    try:
        data = json.loads(raw)
    except ValueError:
        raise ProposalFailed("invalid_proposal") from None
    if not isinstance(data, dict):
        raise ProposalFailed("invalid_proposal")
    persona, prompt, rationale = data.get("persona"), data.get("system_prompt"), data.get("rationale", "")
    if not isinstance(persona, str) or not isinstance(prompt, str) or not isinstance(rationale, str):
        raise ProposalFailed("invalid_proposal")
    persona, prompt = persona.strip(), prompt.strip()
    if not (persona or prompt) or len(persona) > PERSONA_MAX or len(prompt) > SYSTEM_PROMPT_MAX:
        raise ProposalFailed("invalid_proposal")
    if "\x00" in persona or "\x00" in prompt:
        raise ProposalFailed("invalid_proposal")
    return Proposal(persona=persona, system_prompt=prompt, rationale=rationale.strip()[:RATIONALE_MAX])


def has_credential(widget: Widget, assistant: Assistant) -> bool:
    return ai_selectors.resolve_credential(widget, assistant=assistant) is not None


def propose(widget: Widget, assistant: Assistant, messages: list[ChatMessage]) -> Proposal:
    """One provider completion along the assistant's credential chain (no transaction may be open:
    this waits on the network)."""
    chain = ai_selectors.resolve_chain(widget, assistant=assistant)
    if not chain:
        raise ProposalFailed("credential_missing")
    try:
        completion = complete(
            chain, messages, deadline=time.monotonic() + DEADLINE_SECONDS, max_operations=MAX_OPERATIONS
        )
    except ProviderError as exc:
        raise ProposalFailed(f"provider_{exc.kind}") from None
    return parse(completion.text)

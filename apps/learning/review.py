"""What a tuning cycle's proposal adds to the persona and system prompt it would replace.

A cycle's evidence is what anonymous visitors wrote, so its proposal is applied on its own only
when it adds nothing new: no link (the project's one link detection, `apps.core.links`: URLs,
hosts, e-mail addresses, handles), no phone number, no code or number, nothing the secret floor's patterns see,
and no sentence whose skeleton (`apps.ai.services.skeleton`) the previous pair lacks. So a cycle may
remove, reorder, reword within a sentence's letters or fix case and punctuation by itself; anything
else waits for the owner as a wish does.
"""

from __future__ import annotations

import re

from apps.ai import services as ai_services
from apps.support import selectors as support_selectors

_SENTENCE_END = re.compile(r"(?<=[.!?;:。！？])\s+|\n+")
_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_CODE = re.compile(r"[^\W_]*\d[^\W_]*(?:[-_][^\W_]+)*|[^\W_]+(?:[-_][^\W_]+)*[-_]\d[^\W_]*", re.UNICODE)
QUOTE_MAX = 120


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _links(text: str) -> set[str]:
    try:
        found = support_selectors.find_links(support_selectors.normalize_text(text))
    except support_selectors.GuardError:
        return {"<more links than the guard reads>"}
    return {link.view.lower().rstrip("/") for link in found}


def _codes(text: str) -> set[str]:
    return {m.group(0).casefold() for m in _CODE.finditer(text) if any(ch.isdigit() for ch in m.group(0))}


def _phones(text: str) -> set[str]:
    return {re.sub(r"\D", "", m.group(0)) for m in _PHONE.finditer(text) if len(re.sub(r"\D", "", m.group(0))) >= 7}


def additions(*, previous: str, proposed: str) -> list[str]:
    """What `proposed` adds that `previous` did not hold, as short findings (`link: ...`,
    `phone: ...`, `code: ...`, `secret`, `sentence: ...`); empty when it adds nothing."""
    findings = [f"link: {link}" for link in sorted(_links(proposed) - _links(previous))]
    findings += [f"phone: {phone}" for phone in sorted(_phones(proposed) - _phones(previous))]
    findings += [f"code: {code}" for code in sorted(_codes(proposed) - _codes(previous))]
    known = {ai_services.skeleton(s) for s in _sentences(previous)}
    new_sentences = [
        s for s in _sentences(proposed) if ai_services.skeleton(s) and ai_services.skeleton(s) not in known
    ]
    if new_sentences and ai_services.leaks_secret("\n".join(new_sentences)):
        findings.append("secret")
    findings += [f"sentence: {s[:QUOTE_MAX]}" for s in new_sentences]
    return findings

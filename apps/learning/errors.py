"""Problem codes of self-learning and improvement wishes."""

from __future__ import annotations

from apps.ai.services import TestCredentialUnavailable as CredentialUnavailable  # noqa: F401 (one code, one class)
from apps.core.errors import AppError


class NoAssistant(AppError):
    """No assistant to learn for: the widget has no enabled assistant and none was named."""

    status, code, title = 409, "no_assistant", "No assistant"


class TuningGateClosed(AppError):
    """A gate of the kill-switch is closed (`gates` names each closed one: `master_switch`,
    `evidence`, `probation`); GET /v1/ai/learning/kill-switch shows them all."""

    status, code, title = 409, "tuning_gate_closed", "Tuning not allowed now"


class CycleInProgress(AppError):
    """A tuning cycle of this assistant is queued or running (`cycle_id`)."""

    status, code, title = 409, "cycle_in_progress", "A tuning cycle is in progress"


class VersionLive(AppError):
    """The snapshot asked for is already the assistant's live persona and system prompt."""

    status, code, title = 409, "version_live", "Already live"


class PersonaChanged(AppError):
    """The assistant's persona or system prompt changed since this change was made or proposed:
    applying or undoing it would overwrite that edit. Use a persona-version revert, or submit a new wish."""

    status, code, title = 409, "persona_changed", "Persona changed since"


class ProposalPending(AppError):
    """The provider has not proposed the rewrite yet; poll the wish (`proposal_pending`)."""

    status, code, title = 409, "proposal_pending", "Proposal pending"


class WishTransitionNotAllowed(AppError):
    """The wish's status (`wish_status`) does not allow this action; `allowed` lists the actions it does allow."""

    status, code, title = 409, "wish_transition_not_allowed", "Not allowed in this state"

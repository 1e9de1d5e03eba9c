"""Problem codes of the detached assistant test, of the provider-calling routes and of the AI
configuration writes (core specification, Errors)."""

from __future__ import annotations

from apps.core.errors import AppError


class TestInvalidJson(AppError):
    """The detached test body is not well-formed JSON."""

    status, code, title = 400, "invalid_json", "Malformed JSON"


class TestInvalidIdempotencyKey(AppError):
    """The detached test needs `X-Service-Idempotency-Key`: 1 to 64 bytes, no ASCII whitespace or controls."""

    status, code, title = 400, "invalid_idempotency_key", "Invalid idempotency key"


class TestBodyTooLarge(AppError):
    """The detached test body exceeds 131072 bytes."""

    status, code, title = 413, "body_too_large", "Request body too large"


class TestUnsupportedMediaType(AppError):
    """The detached test body must be `application/json`."""

    status, code, title = 415, "unsupported_media_type", "Unsupported media type"


class InvalidInput(AppError):
    """The detached test input (body or query) breaks an input rule; `errors` names each."""

    status, code, title = 422, "invalid_input", "Invalid input"


class DuplicateMember(AppError):
    """A JSON object of the body repeats a member."""

    status, code, title = 422, "duplicate_member", "Duplicate member"


class AssistantNotFound(AppError):
    """No such assistant in this widget."""

    status, code, title = 404, "assistant_not_found", "Assistant not found"


class OperatorNotFound(AppError):
    """No such AI operator of this widget and assistant."""

    status, code, title = 404, "operator_not_found", "Operator not found"


class AmbiguousOperator(AppError):
    """Several AI operators run this assistant: name one with `operator_id`."""

    status, code, title = 409, "ambiguous_operator", "Several operators run this assistant"


class UnsupportedTransport(AppError):
    """The chats would be answered by an external (webhook) operator, which the detached test cannot simulate."""

    status, code, title = 409, "unsupported_transport", "Unsupported transport"


class TestCredentialUnavailable(AppError):
    """No active provider credential resolves for this operator and assistant."""

    status, code, title = 409, "credential_unavailable", "No usable credential"


class IdempotencyReused(AppError):
    """This idempotency key was already used for a detached test within 86400 seconds; no saved answer is
    returned. Never retry an uncertain test with a new key automatically."""

    status, code, title = 409, "idempotency_reused", "Idempotency key already used"


class TestRateLimited(AppError):
    """A detached test of this widget is already running, or 10 were started in the last 60 seconds."""

    status, code, title = 429, "test_rate_limited", "Detached test busy or over quota"


class ProviderFailure(AppError):
    """The provider (and every declared backup) failed; `kind` tells how."""

    status, code, title = 502, "provider_failure", "Provider failure"


class AdmissionUnavailable(AppError):
    """Admission control (the in-flight slot or the start budget) is unavailable; nothing was paid for."""

    status, code, title = 503, "admission_unavailable", "Admission unavailable"


class TestUnavailable(AppError):
    """The detached test cannot run now (its idempotency store is unavailable); nothing was paid for."""

    status, code, title = 503, "test_unavailable", "Detached test unavailable"


class TestBudgetExhausted(AppError):
    """The provider work did not finish within its budget (45 s of provider I/O or 10 HTTP operations)."""

    status, code, title = 504, "test_budget_exhausted", "Test budget exhausted"


class CredentialInactive(AppError):
    """The credential is retired (`is_active: false`); revive it to call its provider."""

    status, code, title = 422, "credential_inactive", "Credential is retired"


class ProviderUnsupported(AppError):
    """The driver does not offer this operation."""

    status, code, title = 422, "provider_unsupported", "Not supported by the provider"


class SpeechUnsupported(AppError):
    """Speech needs the reference vendor (`openai`) as the integration's bound provider."""

    status, code, title = 422, "speech_unsupported", "Speech is not supported by the bound provider"


class AudioTooLarge(AppError):
    """The decoded audio exceeds 6 MiB."""

    status, code, title = 413, "audio_too_large", "Audio too large"


class AssistantUnavailable(AppError):
    """The integration has no enabled assistant or no active credential resolves for it."""

    status, code, title = 503, "assistant_unavailable", "Assistant unavailable"


class InvalidToolPlan(AppError):
    """The provider answered with a tool plan that does not validate against the declared tools."""

    status, code, title = 502, "invalid_tool_plan", "Invalid tool plan from the provider"


class AiUnavailable(AppError):
    """The chat's widget has no effective assistant, or no active provider credential resolves for it."""

    status, code, title = 409, "ai_unavailable", "AI unavailable"


# --- the configuration writes (apps.ai.services) ---------------------------------------------------------


class AssistantInUse(AppError):
    """The assistant still runs AI operators (named in `operators`): rebind or retire them first."""

    status, code, title = 409, "assistant_in_use", "The assistant is run by AI operators"


class CredentialConflict(AppError):
    """The widget already has an active widget-wide credential of this driver: retire it
    (`is_active: false`) or rotate its key instead."""

    status, code, title = 409, "credential_conflict", "An active widget-wide credential of this driver exists"


class CredentialUnavailable(AppError):
    """No active credential can serve this: add one for the provider (widget-wide, or the assistant's)."""

    status, code, title = 409, "credential_unavailable", "No usable credential"


class IntegrationExists(AppError):
    """The widget already has an integration binding; DELETE it first to rotate."""

    status, code, title = 409, "integration_exists", "An integration binding already exists"


class NothingToMigrate(AppError):
    """The widget has no legacy AI settings (persona, system prompt or greeting) to seed an assistant from."""

    status, code, title = 409, "nothing_to_migrate", "No legacy settings to migrate"


class AssistantMissing(AppError):
    """The AI operator's assistant no longer exists: bind it to an assistant (`assistant_id`) to revive it."""

    status, code, title = 409, "assistant_missing", "The operator has no assistant"

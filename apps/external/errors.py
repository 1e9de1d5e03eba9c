"""The external-operator app's problems (each a stable `code`)."""

from apps.core.errors import AppError, Conflict, NotFound, ValidationFailed


class OperatorRevoked(Conflict):
    """The operator is revoked: the final state; nothing moves it or calls it any more."""

    code, title = "operator_revoked", "The external operator is revoked"


class OperatorNotRevoked(Conflict):
    """Only a revoked operator can be deleted: revoke it first (the kill switch)."""

    code, title = "operator_not_revoked", "Only a revoked external operator can be deleted"


class RotationInProgress(Conflict):
    """The previous URL change still drains the old endpoint: wait, or break it with force-drain."""

    code, title = "rotation_in_progress", "A URL rotation is still draining"


class NotRotating(Conflict):
    """force-drain applies only while the operator is `rotating`."""

    code, title = "not_rotating", "The external operator is not rotating"


class OperatorPaused(Conflict):
    """A paused operator takes no deliveries, probes included: resume it first."""

    code, title = "operator_paused", "The external operator is paused"


class TestPending(Conflict):
    """The operator's previous `delivery.test` probe has not settled yet: poll it first."""

    code, title = "test_pending", "A test probe is still pending"


class InvalidState(ValidationFailed):
    """`state` must be one of testing, active, paused, revoked (`rotating` is entered by a URL change)."""

    code, title = "invalid_state", "Not a lifecycle state"


class EscalationScopeRequired(AppError):
    """`escalate: true` or the `[KEY_TO_OPERATOR]` marker needs `responder:escalate`; refused before
    the causation is read, so the callback can be retried with the right token."""

    status, code, title = 403, "escalation_scope_required", "responder:escalate required"


class CausationNotFound(NotFound):
    """No call of this widget carries that causation id (unknown and foreign look the same)."""

    code, title = "causation_not_found", "Unknown causation id"


class BindingMismatch(Conflict):
    """The reply's binding does not match the call (another room, widget or operator); the callback
    is not consumed."""

    code, title = "binding_mismatch", "The reply does not match its call"


class CausationConsumed(Conflict):
    """This causation id was already answered: a callback is consumed once."""

    code, title = "causation_consumed", "The causation id was already used"

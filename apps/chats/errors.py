"""Domain errors of chat data that more than one module raises (the labels' service, the REST
routes, the action engine that re-raises a refusal with its own code and detail)."""

from __future__ import annotations

from apps.core.errors import Conflict, ValidationFailed


class UnknownLabel(ValidationFailed):
    """A label name the widget has no label for (compared in NFC, without regard to case): a 422
    whose `errors` name the offending entries of `labels`."""


class TooManyLabels(ValidationFailed):
    """A chat carries at most MAX_LABELS_PER_CHAT labels: a 422 whose `errors` name `labels`."""


class LabelTaken(Conflict):
    """The widget already has a label of this name (names are compared in NFC, without regard to case)."""

    code, title = "label_taken", "Label name already taken"

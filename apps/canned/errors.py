"""Problems of the canned responses."""

from apps.core.errors import Conflict, ValidationFailed


class ShortcutTaken(Conflict):
    """Another canned response of this widget has this shortcut; shortcuts are unique per widget."""

    code, title = "shortcut_taken", "Shortcut already taken"


class UnknownVariable(ValidationFailed):
    """The text holds a `{{...}}` that is not one of `{{contact.name}}`, `{{contact.email}}`,
    `{{agent.name}}`, `{{widget.name}}` (each with an optional `|fallback`; names are case-sensitive).
    `offending` lists them as written."""

    code, title = "unknown_variable", "Unknown variable"

"""Problems of the proactive messages."""

from apps.core.errors import Conflict


class NameTaken(Conflict):
    """Another proactive message of this widget has this name; names are unique per widget (the page
    calls `trigger(name)` by it)."""

    code, title = "name_taken", "Name already taken"

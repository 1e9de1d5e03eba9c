"""Template filters of the console's pages."""

from django import template

from apps.console.forms import STATUS_LABELS

register = template.Library()


@register.filter
def status_label(status: str) -> str:
    """A chat's status in the console's language (an unknown value is shown as it is)."""
    return str(STATUS_LABELS.get(status, status))

"""What the People pages share: the API serializers' context, the rows a page may name (inside the
console's widget, so another widget's id is a 404 like a missing one), and the Django forms that draw
and parse the inputs (the API's serializers validate them)."""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.utils.translation import gettext_lazy as _

from apps.agents import selectors
from apps.agents.api.serializers import CHANNELS
from apps.agents.models import Agent, Department, Invitation
from apps.agents.services import DAYS
from apps.core.models import Widget

from ... import views as console_views
from .. import forms as settings_forms

CHANNEL_NAMES = {
    "smb": _("The widget on your site"),
    "tg": "Telegram",
    "vk": _("VK"),
    "wa": "WhatsApp",
    "vb": "Viber",
    "fb": "Facebook",
    "ok": _("Odnoklassniki"),
}
DAY_NAMES = {
    "Monday": _("Monday"),
    "Tuesday": _("Tuesday"),
    "Wednesday": _("Wednesday"),
    "Thursday": _("Thursday"),
    "Friday": _("Friday"),
    "Saturday": _("Saturday"),
    "Sunday": _("Sunday"),
}
STATUS_NAMES = {"active": _("Active"), "relaxation": _("Away"), "banned": _("Suspended")}
ROLE_NAMES = {"owner": _("Owner"), "operator": _("Operator")}


api_context = settings_forms.api_context


def refused(form: forms.Form, outcome) -> forms.Form:
    """The bound form showing only the API's messages (the Django form draws, the serializer judges)."""
    form.errors.clear()  # the form's own checks ran (form.errors); only the API's messages are shown
    form.cleaned_data = {}
    # `channels.2` or `agent_ids.0`: the message goes under the group of checkboxes it is about.
    fields = {key: key.split(".")[0] for key in outcome.errors if key.split(".")[0] in form.fields}
    settings_forms.bind(form, outcome, fields=fields)
    return form


def parse_pk(value) -> int:
    """An id from the URL (the console's one rule, `parse_id`), else 404."""
    pk = console_views.parse_id(str(value))
    if pk is None:
        raise Http404
    return pk


def operator_of(request, pk) -> Agent:
    """A human agent of the console's widget (the People area manages people; the AI operator has
    its own area)."""
    agent = Agent.objects.filter(widget=request.agent.widget, type=Agent.Type.HUMAN, pk=parse_pk(pk)).first()
    if agent is None:
        raise Http404("No such operator.")
    return agent


def invitation_of(request, pk) -> Invitation:
    invitation = Invitation.objects.filter(widget=request.agent.widget, pk=parse_pk(pk)).first()
    if invitation is None:
        raise Http404("No such invitation.")
    return invitation


def department_of(request, pk) -> Department:
    department = selectors.find_department(request.agent.widget, parse_pk(pk))
    if department is None:
        raise Http404("No such department.")
    return department


def channel_choices(widget: Widget) -> list[tuple[str, str]]:
    cabinets = sorted(selectors.ad_cabinet_ids(widget))
    return [(code, CHANNEL_NAMES[code]) for code in CHANNELS] + [
        (f"av__{cabinet}", _("Ad cabinet %(id)s") % {"id": cabinet}) for cabinet in cabinets
    ]


def member_choices(widget: Widget, *, keep: list[int] = ()) -> list[tuple[int, str]]:
    """Agents a department may hold: every one that is not suspended, and the members it has."""
    agents = Agent.objects.filter(widget=widget).order_by("name", "pk")
    return [
        (agent.pk, f"{agent.name} {agent.surname}".strip() or agent.email)
        for agent in agents
        if agent.status != Agent.Status.BANNED or agent.pk in keep
    ]


class InviteForm(forms.Form):
    email = forms.CharField(
        label=_("E-mail address"),
        widget=forms.EmailInput(attrs={"autocomplete": "off", "dir": "ltr"}),
        help_text=_("We send a link valid for 7 days; whoever follows it sets a name and a password."),
    )


class DepartmentForm(forms.Form):
    name = forms.CharField(label=_("Name"), required=False)
    channels = forms.MultipleChoiceField(
        label=_("Channels it serves"), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, widget: Widget, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["channels"].choices = channel_choices(widget)


class MembersForm(forms.Form):
    agent_ids = forms.MultipleChoiceField(label=_("Members"), required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, widget: Widget, keep: list[int] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent_ids"].choices = member_choices(widget, keep=keep)


def posted_ids(values: list[str]) -> list:
    """Ids as the API receives them: integers where they are, the raw value otherwise (the
    serializer names it)."""
    result = []
    for value in values:
        try:
            result.append(int(value))
        except (TypeError, ValueError):
            result.append(value)
    return result


# --- a department's week (Monday..Sunday: closed, all day, or from-to) ------------------------------


def week_rows(schedule: dict, errors: dict | None = None, *, prefix: str = "schedule") -> list[dict]:
    """One row per day for the week editor: its mode, its hours and the messages about it."""
    errors = errors or {}
    rows = []
    for day in DAYS:
        value = schedule.get(day)
        if value == "full":
            mode, start, end = "full", "", ""
        elif isinstance(value, dict):
            mode, start, end = "hours", value.get("from", ""), value.get("to", "")
        else:
            mode, start, end = "closed", "", ""
        messages = []
        for key, items in errors.items():
            if key == f"{prefix}.{day}" or key.startswith(f"{prefix}.{day}."):
                messages.extend(items)
        rows.append({"day": day, "name": DAY_NAMES[day], "mode": mode, "start": start, "end": end, "errors": messages})
    return rows


def posted_week(post) -> dict:
    """The week as the API's `schedule` member from the editor's inputs."""
    week = {}
    for day in DAYS:
        mode = post.get(f"{day}-mode", "closed")
        if mode == "full":
            week[day] = "full"
        elif mode == "hours":
            week[day] = {"from": post.get(f"{day}-from", ""), "to": post.get(f"{day}-to", "")}
        else:
            week[day] = None
    return week

"""/console/settings/people/sla/: the SLA policies (list, create, edit, delete after a confirmation)
through the API's serializers (SlaPolicyInput, SlaPolicyPatchInput) and services (create_policy,
update_policy, delete_policy). The owner types each target as an amount and a unit (minutes, hours,
days); the page sends the API the seconds they make, so the serializer judges the same body the API
would and refuses it in the same words."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import forms as django_forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from apps.agents.models import Department
from apps.routing import sla as services
from apps.routing.api.sla_serializers import SlaPolicyInput, SlaPolicyPatchInput
from apps.routing.models import SlaPolicy

from .. import forms
from ..access import owner_required
from ..views import settings_context
from . import pages
from .views import _back

KINDS = (
    ("first_response", gettext_lazy("First response within")),
    ("next_response", gettext_lazy("Each next response within")),
    ("resolution", gettext_lazy("Resolved within")),
)
KIND_HELP = {
    "first_response": gettext_lazy(
        "From the visitor's first message to the first answer they see (from a person or the AI operator)."
    ),
    "next_response": gettext_lazy("From a visitor's message that waits after an answer to the next answer."),
    "resolution": gettext_lazy("From the visitor's first message until the chat is closed."),
}
UNITS = (("minutes", 60), ("hours", 3600), ("days", 86400))
UNIT_NAMES = {"minutes": gettext_lazy("minutes"), "hours": gettext_lazy("hours"), "days": gettext_lazy("days")}
# Far beyond the API's 604800 seconds: a larger amount is refused by the serializer's own maximum,
# without building an integer of a million digits from "1e999999".
AMOUNT_CAP = 10**12


def policy_of(request, pk) -> SlaPolicy:
    policy = SlaPolicy.objects.filter(widget=request.agent.widget, pk=pages.parse_pk(pk)).first()
    if policy is None:
        raise Http404("No such SLA policy.")
    return policy


def split_seconds(seconds: int | None) -> tuple[str, str]:
    """A stored target as the page shows it: the largest unit it is a whole number of (minutes with
    a fraction for an odd number of seconds set through the API)."""
    if seconds is None:
        return "", "minutes"
    for unit, size in reversed(UNITS):
        if seconds % size == 0:
            return str(seconds // size), unit
    return f"{seconds / 60:g}", "minutes"


def posted_seconds(amount: str, unit: str):
    """The API's `<kind>_seconds` for an amount and a unit: null when empty, whole seconds for a
    number, and the typed text itself otherwise (the serializer's "Must be an integer." names it)."""
    text = amount.strip().replace(",", ".")
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return amount.strip()
    if not value.is_finite():
        return amount.strip()
    size = dict(UNITS).get(unit, 60)
    value = max(-AMOUNT_CAP, min(AMOUNT_CAP, value))
    return int((value * size).to_integral_value())


def duration_text(seconds: int | None) -> str:
    if seconds is None:
        return "—"
    if seconds % 86400 == 0:
        n = seconds // 86400
        return ngettext("%(count)s day", "%(count)s days", n) % {"count": n}
    if seconds % 3600 == 0:
        n = seconds // 3600
        return ngettext("%(count)s hour", "%(count)s hours", n) % {"count": n}
    if seconds % 60 == 0:
        n = seconds // 60
        return ngettext("%(count)s minute", "%(count)s minutes", n) % {"count": n}
    return ngettext("%(count)s second", "%(count)s seconds", seconds) % {"count": seconds}


def unit_field() -> django_forms.ChoiceField:
    return django_forms.ChoiceField(
        label=gettext_lazy("Unit"), required=False, choices=[(unit, UNIT_NAMES[unit]) for unit, _size in UNITS]
    )


class PolicyForm(django_forms.Form):
    """Draws the inputs; the API's serializer judges them (as seconds)."""

    name = django_forms.CharField(label=gettext_lazy("Name"), required=False)
    department_id = django_forms.ChoiceField(
        label=gettext_lazy("Department"),
        required=False,
        help_text=gettext_lazy(
            "Chats of this department follow this policy. None: the default policy, for every chat whose "
            "department has no policy of its own."
        ),
    )
    first_response = django_forms.CharField(label=KINDS[0][1], required=False, help_text=KIND_HELP["first_response"])
    first_response_unit = unit_field()
    next_response = django_forms.CharField(label=KINDS[1][1], required=False, help_text=KIND_HELP["next_response"])
    next_response_unit = unit_field()
    resolution = django_forms.CharField(label=KINDS[2][1], required=False, help_text=KIND_HELP["resolution"])
    resolution_unit = unit_field()
    business_hours_only = django_forms.BooleanField(
        label=gettext_lazy("Count only business hours (the clocks stop while the widget is closed)"), required=False
    )

    def __init__(self, *args, widget, **kwargs):
        super().__init__(*args, **kwargs)
        departments = Department.objects.filter(widget=widget).order_by("name", "pk")
        self.fields["department_id"].choices = [("", _("None: the default policy"))] + [
            (str(d.pk), d.name) for d in departments
        ]
        for kind, _label in KINDS:
            self.fields[kind].widget = django_forms.NumberInput(attrs={"min": 0, "step": "any", "inputmode": "decimal"})

    def durations(self) -> list[dict]:
        """The three targets for the template: amount and unit fields side by side."""
        return [{"kind": kind, "amount": self[kind], "unit": self[f"{kind}_unit"]} for kind, _label in KINDS]


def initial_of(policy: SlaPolicy) -> dict:
    initial = {
        "name": policy.name,
        "department_id": "" if policy.department_id is None else str(policy.department_id),
        "business_hours_only": policy.business_hours_only,
    }
    for kind, _label in KINDS:
        initial[kind], initial[f"{kind}_unit"] = split_seconds(getattr(policy, f"{kind}_seconds"))
    return initial


def policy_body(post) -> dict:
    """The API's body the page's inputs mean: every member (a PATCH from the edit page sends them all)."""
    department = post.get("department_id", "").strip()
    body = {
        "name": post.get("name", ""),
        "department_id": (pages.posted_ids([department])[0] if department else None),
        "business_hours_only": post.get("business_hours_only") == "on",
    }
    for kind, _label in KINDS:
        body[f"{kind}_seconds"] = posted_seconds(post.get(kind, ""), post.get(f"{kind}_unit", "minutes"))
    return body


def refused(form: PolicyForm, outcome) -> PolicyForm:
    """The form showing only the API's messages, each under the input it is about."""
    form.errors.clear()
    form.cleaned_data = {}
    fields = {f"{kind}_seconds": kind for kind, _label in KINDS}
    forms.bind(form, outcome, fields=fields)
    return form


def _rows(widget) -> list[dict]:
    policies = SlaPolicy.objects.filter(widget=widget).select_related("department")
    policies = sorted(policies, key=lambda p: (p.department_id is not None, p.name.lower(), p.pk))
    return [
        {
            "policy": policy,
            "durations": [duration_text(getattr(policy, f"{kind}_seconds")) for kind, _label in KINDS],
        }
        for policy in policies
    ]


def _form_page(request, form, *, policy=None, status=200):
    context = settings_context(request, area="people", people_tab="sla", form=form, policy=policy)
    return render(request, "console/settings/people/sla_form.html", context, status=status)


@never_cache
@owner_required
@require_GET
def index(request):
    context = settings_context(request, area="people", people_tab="sla", rows=_rows(request.agent.widget), kinds=KINDS)
    return render(request, "console/settings/people/sla.html", context)


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def create(request):
    widget = request.agent.widget
    if request.method == "GET":
        return _form_page(request, PolicyForm(widget=widget))
    outcome = forms.submit(
        SlaPolicyInput,
        policy_body(request.POST),
        lambda v: services.create_policy(widget=widget, data=v),
        context=pages.api_context(request),
    )
    if outcome.refused:
        return _form_page(request, refused(PolicyForm(request.POST, widget=widget), outcome), status=outcome.status)
    messages.success(request, _("SLA policy %(name)s created.") % {"name": outcome.value.name})
    return _back("console:settings:people-sla")


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def edit(request, pk):
    policy = policy_of(request, pk)
    widget = request.agent.widget
    if request.method == "GET":
        return _form_page(request, PolicyForm(widget=widget, initial=initial_of(policy)), policy=policy)
    outcome = forms.submit(
        SlaPolicyPatchInput,
        policy_body(request.POST),
        lambda v: services.update_policy(widget=widget, policy=policy, changes=v),
        context=pages.api_context(request),
        partial=True,
    )
    if outcome.refused:
        form = refused(PolicyForm(request.POST, widget=widget), outcome)
        return _form_page(request, form, policy=policy, status=outcome.status)
    messages.success(request, _("Saved."))
    return _back("console:settings:people-sla")


@never_cache
@owner_required
@require_http_methods(["GET", "POST"])
def delete(request, pk):
    policy = policy_of(request, pk)
    context = settings_context(request, area="people", people_tab="sla", policy=policy)
    if request.method == "GET":
        return render(request, "console/settings/people/sla_delete.html", context)
    outcome = forms.perform(lambda: services.delete_policy(widget=request.agent.widget, policy=policy))
    if outcome.refused:
        context["refusal"] = outcome.message
        return render(request, "console/settings/people/sla_delete.html", context, status=outcome.status)
    messages.success(request, _("SLA policy %(name)s deleted.") % {"name": policy.name})
    return _back("console:settings:people-sla")

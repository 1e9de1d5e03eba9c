"""Put a widget's account on a plan (operations staff): `{"account_id", "plan"}`."""

from __future__ import annotations

from apps.billing import services
from apps.billing.models import Plan
from apps.core import services as core_services
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Put the account of a widget on a plan (free, pro, business or one made in admin)."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--plan", required=True, help="the plan's slug")

    def handle(self, *args, widget, plan, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        chosen = Plan.objects.filter(slug=plan).first()
        if chosen is None:
            known = ", ".join(Plan.objects.order_by("slug").values_list("slug", flat=True)) or "none"
            self.fail(f"no plan {plan!r} (plans: {known})")
        services.assign_plan(account=target.account, plan=chosen)
        self.emit_json({"account_id": target.account_id, "plan": chosen.slug})

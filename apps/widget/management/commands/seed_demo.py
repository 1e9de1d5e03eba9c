from django.db import transaction

from apps.billing import services as billing_services
from apps.core import services
from apps.core.auth import scopes as catalogue
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget

from ... import selectors as widget_selectors
from ... import services as widget_services

DEMO_EMAIL = "demo@example.com"
DEMO_WIDGET = "Demo widget"


class Command(OperatorCommand):
    help = "Create (once) a demo widget with the API enabled and demo billing, and print a fresh token for it."

    @transaction.atomic
    def handle(self, *args, **options):
        widget = Widget.objects.filter(account__user__email=DEMO_EMAIL, name=DEMO_WIDGET).first()
        if widget is None:
            widget = services.create_widget(owner_email=DEMO_EMAIL, name=DEMO_WIDGET, enable_api=True)
        if not widget_selectors.stored_values(widget).get("widget_name"):
            # The chat window's title, and what `{{widget.name}}` in a canned response fills in.
            widget_services.update_settings(widget=widget, body={"widget_name": DEMO_WIDGET})
        billing = billing_services.seed_demo_billing(widget)
        issued = services.issue_token(
            widget=widget, scopes=sorted(catalogue.OPERATIONAL_SCOPES), name="demo (seed_demo)"
        )
        self.emit_json(
            {
                "account_id": widget.account_id,
                "widget_id": widget.pk,
                "button_guid": widget.button_guid,
                "owner_agent_id": widget.agents.get(is_owner=True).pk,
                "token": issued.plaintext,
                "token_prefix": issued.token.prefix,
                "billing": billing,
            }
        )

from apps.core import services as core_services
from apps.core.errors import AppError
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget
from apps.external import services


class Command(OperatorCommand):
    help = (
        "Create an external (webhook) operator of a widget, `active` unless --state says otherwise. "
        "Prints its public_id, agent id and signing secret (shown once) as JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        parser.add_argument("--name", required=True)
        parser.add_argument("--url", required=True, help="https endpoint resolving to a public address")
        parser.add_argument("--state", default="active", choices=["active", "testing", "paused"])
        parser.add_argument("--secret", default=None, help="the signing secret (generated when omitted)")

    def handle(self, *args, widget, name, url, state, secret=None, **options):
        try:
            target = core_services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        if secret is not None and not 16 <= len(secret) <= 256:
            self.fail("--secret must be 16 to 256 characters")
        try:
            operator, secret = services.create_external_operator(
                widget=target, name=name, url=url, secret=secret, state=state
            )
        except AppError as exc:
            detail = "; ".join(f"{k}: {' '.join(v)}" for k, v in (exc.errors or {}).items()) or exc.detail
            self.fail(f"refused: {detail}")
        self.emit_json(
            {
                "public_id": operator.public_id,
                "agent_id": operator.agent_id,
                "name": operator.name,
                "url": operator.url,
                "state": operator.state,
                "signing_secret": secret,
            }
        )

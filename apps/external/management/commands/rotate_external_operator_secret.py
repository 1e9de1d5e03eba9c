from apps.core.errors import AppError
from apps.core.management.base import OperatorCommand
from apps.external import services
from apps.external.models import ExternalOperator


class Command(OperatorCommand):
    help = (
        "Give an external operator a new signing secret (printed once as JSON). The previous secret keeps "
        "signing beside it for EXTERNAL_OPERATOR_SECRET_OVERLAP_SECONDS (3600 by default)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--operator", required=True, help="the operator's public_id (xop_...)")
        parser.add_argument("--secret", default=None, help="the new secret (generated when omitted)")

    def handle(self, *args, operator, secret=None, **options):
        op = ExternalOperator.objects.filter(public_id=operator, deleted_at=None).select_related("widget").first()
        if op is None:
            self.fail(f"no external operator {operator!r}")
        try:
            new = services.rotate_operator_secret(widget=op.widget, operator=op, secret=secret)
        except AppError as exc:
            self.fail(f"refused: {exc.detail}")
        self.emit_json(
            {
                "public_id": op.public_id,
                "signing_secret": new,
                "previous_valid_until_seconds": int(services.secret_overlap().total_seconds()),
            }
        )

from apps.core import services
from apps.core.auth import scopes as catalogue
from apps.core.auth.availability import presets_text, scopes_text
from apps.core.management.base import OperatorCommand
from apps.core.models import Widget


class Command(OperatorCommand):
    help = "Issue an API token for a widget; prints the plaintext token alone (shown once)."

    def add_arguments(self, parser):
        parser.add_argument("--widget", required=True, help="numeric id or button_guid")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument(
            "--scopes",
            help=f"comma-separated scopes, or `all` (the {len(catalogue.OPERATIONAL_SCOPES)} operational scopes); "
            + scopes_text(),
        )
        group.add_argument(
            "--preset",
            choices=sorted(catalogue.PRESETS),
            help="a named scope set instead of --scopes; " + presets_text(),
        )
        parser.add_argument("--name", default="")
        parser.add_argument("--expires-in", type=int, default=None, help="seconds")

    def handle(self, *args, widget, scopes, preset, name, expires_in, **options):
        try:
            chosen = list(catalogue.PRESETS[preset]) if preset else catalogue.parse_scopes(scopes)
        except ValueError as exc:
            self.fail(f"{exc}; {scopes_text()}; `all`; {presets_text()}")
        try:
            target = services.resolve_widget(widget)
        except Widget.DoesNotExist:
            self.fail(f"no widget {widget!r}")
        try:
            issued = services.issue_token(widget=target, scopes=chosen, name=name, expires_in=expires_in)
        except ValueError as exc:
            self.fail(str(exc))
        self.stdout.write(issued.plaintext)

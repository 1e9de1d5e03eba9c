from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operator console at /console/: server-rendered pages, htmx and the operator websocket."""

    name = "apps.console"
    label = "console"

    def ready(self):
        from apps.core import admin_site

        from . import realtime, twofa

        realtime.register()
        # Django admin asks a second factor of a user whose widget requires two-factor sign-in.
        admin_site.require_second_factor_when(twofa.required_for)

"""Two-factor sign-in's routes, inside the console's namespace (included by apps.console.urls)."""

from django.urls import path

from . import twofa_views

urlpatterns = [
    path("login/code/", twofa_views.login_code, name="login-code"),
    path("login/enrol/", twofa_views.login_enrol, name="login-enrol"),
    path("account/two-factor/", twofa_views.two_factor, name="two-factor"),
    path("account/two-factor/enrol/", twofa_views.two_factor_enrol, name="two-factor-enrol"),
    path("account/two-factor/off/", twofa_views.two_factor_off, name="two-factor-off"),
    path("account/two-factor/recovery-codes/new/", twofa_views.new_recovery_codes, name="recovery-codes-new"),
    path("account/two-factor/recovery-codes/", twofa_views.recovery_codes, name="recovery-codes"),
]

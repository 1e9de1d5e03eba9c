"""Single sign-on (OpenID Connect), mounted at /console/sso/: the start and the provider's callback,
the redirect URI registered at the provider."""

from django.urls import path

from . import sso

urlpatterns = [
    path("start/", sso.start, name="sso-start"),
    path("callback/", sso.callback, name="sso-callback"),
]

"""Single sign-on for the console: OpenID Connect (authorization code, PKCE S256, state and nonce)
on mozilla-django-oidc, configured by OIDC_ISSUER / OIDC_CLIENT_ID / OIDC_CLIENT_SECRET.

SECURITY: a person signs in only when the provider vouches for the e-mail (`email_verified` true,
or Microsoft Entra ID's `xms_edov`) and that e-mail belongs to exactly one active user with a
console row (`access.may_sign_in`); nobody is ever created. Every call to the provider (discovery,
token, keys, userinfo) goes through the guarded outbound client, https only. The library reads its
settings through `get_settings`, which its views and backend let a subclass replace: ours answer
from the three variables and the issuer's discovery document, so nothing else is configured.
"""

from __future__ import annotations

import logging
from urllib.parse import quote_plus, urlsplit

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView
from requests.exceptions import HTTPError

from apps.platform import outbound

from . import access, forms, signin

log = logging.getLogger(__name__)

METHOD = "oidc"
DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_TTL = 3600
TIMEOUT = (3.05, 10)
DEADLINE = 15.0
MAX_BYTES = 256 * 1024

# What the login page says for each refusal (the reason is also what signin.first_factor_failed
# records).
REFUSALS = {
    "email_unverified": _("Your sign-in provider has not verified your e-mail address, so it cannot sign you in here."),
    "unknown_email": _(
        "No operator of this console has the e-mail address your sign-in provider gave. "
        "Ask the owner to invite you with that address."
    ),
    "provider_refused": _("Your sign-in provider did not confirm who you are. Start again."),
    "state_mismatch": _("This sign-in has expired or was already used. Start again."),
    "provider_unreachable": _(
        "Your sign-in provider cannot be reached right now. Try again later or sign in with your password."
    ),
}
STATUS = {
    "email_unverified": 403,
    "unknown_email": 403,
    "provider_refused": 401,
    "state_mismatch": 400,
    "provider_unreachable": 502,
}


class ProviderUnavailable(Exception):
    """The issuer's discovery document could not be read or does not describe this issuer."""


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_CLIENT_ID)


def provider_name() -> str:
    return settings.OIDC_PROVIDER_NAME or urlsplit(settings.OIDC_ISSUER).hostname or ""


def _get(url: str, **kwargs):
    return outbound.request("GET", url, timeout=TIMEOUT, deadline=DEADLINE, max_bytes=MAX_BYTES, **kwargs)


def discovery() -> dict:
    """The issuer's discovery document (cached an hour). Raises ProviderUnavailable."""
    issuer = settings.OIDC_ISSUER.rstrip("/")
    key = f"console:oidc-discovery:{issuer}"
    document = cache.get(key)
    if document is not None:
        return document
    try:
        response = _get(issuer + DISCOVERY_PATH)
        document = response.json() if response.status_code == 200 else None
    except (outbound.OutboundError, outbound.OutboundBlocked, ValueError) as exc:
        log.warning("sso: discovery at %s failed: %s", issuer, exc)
        raise ProviderUnavailable from None
    needed = ("issuer", "authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")
    # OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was fetched from.
    if not isinstance(document, dict) or any(not isinstance(document.get(k), str) for k in needed):
        log.warning("sso: discovery at %s is not a usable document", issuer)
        raise ProviderUnavailable
    if document["issuer"].rstrip("/") != issuer:
        log.warning("sso: discovery at %s names another issuer", issuer)
        raise ProviderUnavailable
    cache.set(key, document, DISCOVERY_TTL)
    return document


_FROM_DISCOVERY = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def library_setting(attr: str, *default):
    """What mozilla-django-oidc asks for, answered from our three variables and the discovery
    document; anything else keeps the library's default."""
    if attr in _FROM_DISCOVERY:
        return discovery()[_FROM_DISCOVERY[attr]]
    if attr == "OIDC_TOKEN_USE_BASIC_AUTH":
        # RFC 6749 §2.3.1: every server takes HTTP Basic; the body only where the provider says so.
        methods = discovery().get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        return "client_secret_basic" in methods
    fixed = {
        "OIDC_RP_CLIENT_ID": settings.OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": "RS256",  # every OpenID provider must offer it (Core 1.0 §15.1)
        "OIDC_RP_IDP_SIGN_KEY": None,
        "OIDC_RP_SCOPES": "openid email",
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_CREATE_USER": False,
        "OIDC_ALLOW_UNSECURED_JWT": False,
        "OIDC_VERIFY_KID": True,
        "OIDC_STORE_ACCESS_TOKEN": False,
        "OIDC_STORE_ID_TOKEN": False,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "console:sso-callback",
        "OIDC_REDIRECT_FIELD_NAME": "next",
    }
    if attr in fixed:
        return fixed[attr]
    if default:
        return default[0]
    raise KeyError(attr)


def _refuse(request, reason: str) -> None:
    """Remember the first refusal of this callback for the page (the backend and the view both see
    the request)."""
    if not getattr(request, "sso_refusal", None):
        request.sso_refusal = reason


class ConsoleOIDCBackend(OIDCAuthenticationBackend):
    """Matches the provider's verified e-mail to an existing console user; never creates one."""

    get_settings = staticmethod(library_setting)

    def __init__(self, *args, **kwargs):
        # Django builds every listed backend for each authenticate() call (the admin's password
        # sign-in too): the provider's endpoints are looked up only when a callback arrives.
        self.UserModel = get_user_model()

    def authenticate(self, request, *, nonce, code_verifier):
        # Keyword-only: Django offers a password sign-in's credentials to this backend too, and
        # skips it because they do not bind.
        if request is None or not enabled():
            return None
        self.request = request
        try:
            super().__init__()
            return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        except ProviderUnavailable:
            _refuse(request, "provider_unreachable")
        except (outbound.OutboundError, outbound.OutboundBlocked) as exc:
            log.warning("sso: provider call failed: %s", exc)
            _refuse(request, "provider_unreachable")
        except HTTPError as exc:
            log.info("sso: the provider refused the code: %s", getattr(exc.response, "status_code", ""))
            _refuse(request, "provider_refused")
        except (SuspiciousOperation, jwt.PyJWTError, ValueError, KeyError) as exc:
            log.info("sso: the ID token was refused: %s", exc)
            _refuse(request, "provider_refused")
        return None

    # -- the provider's answers -----------------------------------------------------------------

    def verify_token(self, token, **kwargs):
        """The library checks the signature and the nonce; the issuer and the audience too
        (Core 1.0 §3.1.3.7)."""
        payload = super().verify_token(token, **kwargs)
        if "nonce" in kwargs:  # the ID token (a signed userinfo answer carries no nonce)
            audience = payload.get("aud")
            audiences = audience if isinstance(audience, list) else [audience]
            if str(payload.get("iss", "")).rstrip("/") != settings.OIDC_ISSUER.rstrip("/"):
                raise SuspiciousOperation("ID token from another issuer")
            if settings.OIDC_CLIENT_ID not in audiences:
                raise SuspiciousOperation("ID token for another client")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        response = _get(self.OIDC_OP_USER_ENDPOINT, headers={"Authorization": f"Bearer {access_token}"})
        if response.status_code != 200:
            raise HTTPError(f"userinfo answered {response.status_code}", response=response)
        if response.headers.get("content-type", "").lower().startswith("application/jwt"):
            claims = super().verify_token(response.text)
        else:
            claims = response.json()
        if not isinstance(claims, dict) or claims.get("sub") != payload.get("sub"):
            # Core 1.0 §5.3.2: a userinfo answer about someone else is not used
            raise SuspiciousOperation("userinfo names another subject")
        # Entra ID puts its verification claim only in the ID token: the two are read together,
        # the userinfo answer winning.
        return {**payload, **claims}

    def get_token(self, payload):
        auth = None
        if self.get_settings("OIDC_TOKEN_USE_BASIC_AUTH"):
            # form-encoded before Basic encoding (RFC 6749 §2.3.1)
            auth = (quote_plus(payload["client_id"]), quote_plus(payload.pop("client_secret")))
        response = outbound.request(
            "POST",
            self.OIDC_OP_TOKEN_ENDPOINT,
            data=payload,
            auth=auth,
            timeout=TIMEOUT,
            deadline=DEADLINE,
            max_bytes=MAX_BYTES,
        )
        self.raise_token_response_error(response)
        return response.json()

    def retrieve_matching_jwk(self, token):
        """The provider's key for `token` (same rules as the library: kid and alg must match)."""
        response = _get(self.OIDC_OP_JWKS_ENDPOINT)
        if response.status_code != 200:
            raise HTTPError(f"keys answered {response.status_code}", response=response)
        header = jwt.get_unverified_header(token)
        key = None
        for jwk in response.json().get("keys", []):
            if jwk.get("kid") != header.get("kid"):
                continue
            if "alg" in jwk and jwk["alg"] != header.get("alg"):
                continue
            key = jwk
        if key is None:
            raise SuspiciousOperation("No key of the provider matches the token.")
        return jwt.PyJWK(key)

    # -- who the claims name ----------------------------------------------------------------------

    def verify_claims(self, claims):
        self.request.sso_email = str(claims.get("email") or "")[:254]
        verified = claims.get("email_verified", claims.get("xms_edov"))
        if not claims.get("email") or verified not in (True, "true"):
            _refuse(self.request, "email_unverified")
            return False
        return True

    def filter_users_by_claims(self, claims):
        email = claims.get("email")
        users = [u for u in self.UserModel.objects.filter(email__iexact=email, is_active=True) if access.may_sign_in(u)]
        if not users:
            _refuse(self.request, "unknown_email")
        elif len(users) > 1:
            log.warning("sso: %d console users share the e-mail the provider gave", len(users))
            _refuse(self.request, "unknown_email")
            return []
        return users

    def create_user(self, claims):
        raise SuspiciousOperation("single sign-on never creates a user")

    def get_user(self, user_id):
        # Django's own lookup (an inactive user is nobody), not the library's
        return ModelBackend.get_user(self, user_id)


def _console_next(value: str | None, request) -> str:
    if (
        value
        and value.startswith("/console/")
        and url_has_allowed_host_and_scheme(value, allowed_hosts={request.get_host()}, require_https=False)
    ):
        return value
    return reverse("console:chats")


def refusal_page(request, reason: str) -> HttpResponse:
    """The login page with the sentence for `reason`; nothing signed in."""
    context = {"form": forms.LoginForm(), "next": reverse("console:chats"), "error": REFUSALS[reason]}
    return render(request, "console/login.html", context, status=STATUS[reason])


class StartView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider with a fresh state, nonce and PKCE challenge (S256)."""

    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs):
        # The endpoint comes from the discovery document, read in get() where a failure can
        # answer with a page.
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)

    def get(self, request):
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = library_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable:
            return refusal_page(request, "provider_unreachable")
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer: the library checks the state (and forgets it: a replay fails), the
    backend the code, the ID token and the e-mail; signin.first_factor_passed takes over."""

    get_settings = staticmethod(library_setting)

    def get(self, request):
        if not enabled():
            raise Http404("Single sign-on is not configured.")
        # The library refuses a state this session never sent, or sent and already used (it forgets
        # each state as it reads it); the page says which.
        if "error" not in request.GET and request.GET.get("state") not in (request.session.get("oidc_states") or {}):
            _refuse(request, "state_mismatch")
        try:
            return super().get(request)
        except SuspiciousOperation:
            return self.login_failure()

    @property
    def success_url(self):
        return _console_next(self.request.session.get("oidc_login_next"), self.request)

    def login_success(self):
        return signin.first_factor_passed(self.request, self.user, method=METHOD, next_url=self.success_url)

    def login_failure(self):
        request = self.request
        reason = getattr(request, "sso_refusal", None) or "provider_refused"
        signin.first_factor_failed(request, email=getattr(request, "sso_email", ""), method=METHOD, reason=reason)
        return refusal_page(request, reason)


start = never_cache(StartView.as_view())
callback = never_cache(CallbackView.as_view())

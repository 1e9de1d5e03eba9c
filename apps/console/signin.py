"""The console's one way in after a first factor (a password, or single sign-on): every way of
proving who one is ends in `first_factor_passed` or `first_factor_failed`, so the second step and
the sign-in audit apply to all of them alike.

After the first factor a user who enrolled in two-factor sign-in is not signed in yet: the session
holds who passed it (`PENDING_KEY`, for `PENDING_SECONDS`) and the code step finishes the sign-in.
A user without a device whose widget requires two-factor sign-in enrols first. Every sign-in and
every refused attempt for a known operator leaves an audit row per widget of the user's operator
rows (`auth.signed_in`, `auth.sign_in_failed`) with the client address and the method.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django_otp import login as otp_login

from apps.audit import services as audit
from apps.core.ratelimit import Budget, Decision, client_address

from . import access, services, twofa

log = logging.getLogger(__name__)

PENDING_KEY = "console_signin_pending"
# How long the code step waits after the first factor before the password is asked again.
PENDING_SECONDS = 600
# Recovery codes just made, kept for the one page that shows them (`pop_recovery_codes`).
CODES_KEY = "console_recovery_codes"

SIGNED_IN = "auth.signed_in"
SIGN_IN_FAILED = "auth.sign_in_failed"

# Second-factor attempts (the code step, enrolment, turning off, new recovery codes), spent before
# the code is checked: per user, which bounds guessing one account's six digits from any number of
# addresses, and per address.
CODES_BY_USER = Budget("console_code:user", 10, 900)
CODES_BY_ADDRESS = Budget("console_code:addr", 30, 300)


@dataclass(frozen=True)
class Pending:
    """A user who passed the first factor in this session and has a second step to do."""

    user: object
    method: str
    next_url: str
    step: str  # "code" or "enrol"


def first_factor_passed(request, user, *, method: str, next_url: str) -> HttpResponse:
    """`user` proved the first factor by `method` (`password`, `oidc`): the code step when they
    enrolled, enrolment when a widget of theirs requires it, else signed in and on to `next_url` (a
    console path the caller checked)."""
    if twofa.is_enrolled(user):
        return _hold(request, user, method=method, next_url=next_url, step="code")
    if twofa.required_for(user):
        return _hold(request, user, method=method, next_url=next_url, step="enrol")
    return complete(request, user, method=method, next_url=next_url)


def first_factor_failed(request, *, email: str, method: str, reason: str) -> None:
    """A first factor was refused for `email` (`reason`: `bad_credentials`, or the caller's own
    word): an audit row per widget of each operator with that e-mail, else only a log line."""
    address = client_address(request)
    users = list(get_user_model().objects.filter(email__iexact=email.strip())) if email.strip() else []
    written = sum(_record(user, SIGN_IN_FAILED, address=address, method=method, reason=reason) for user in users)
    log.info(
        "console sign-in refused",
        extra={"method": method, "reason": reason, "address": address, "audited": written},
    )


def second_factor_failed(request, user, *, method: str, reason: str) -> None:
    address = client_address(request)
    _record(user, SIGN_IN_FAILED, address=address, method=method, reason=reason)
    log.info("console second factor refused", extra={"method": method, "reason": reason, "address": address})


def complete(request, user, *, method: str, next_url: str, device=None, first_factor: str = "") -> HttpResponse:
    """Sign `user` in (after the second factor `device`, when there was one), record it, and go on."""
    request.session.pop(PENDING_KEY, None)
    services.sign_in(request, user)
    if device is not None:
        otp_login(request, device)
    _record(user, SIGNED_IN, address=client_address(request), method=method, first_factor=first_factor)
    return HttpResponseRedirect(next_url)


def mark_verified(request, device) -> None:
    """The signed-in session passed the second factor with `device` (enrolled from the account page)."""
    otp_login(request, device)


def pending(request) -> Pending | None:
    """Who passed the first factor in this session, while it is fresh and they may still sign in."""
    data = request.session.get(PENDING_KEY)
    if not isinstance(data, dict):
        return None
    user = None
    if time.time() - float(data.get("at", 0)) <= PENDING_SECONDS:
        user = get_user_model().objects.filter(pk=data.get("user"), is_active=True).first()
    if user is None or not access.may_sign_in(user):
        request.session.pop(PENDING_KEY, None)
        return None
    return Pending(user=user, method=str(data["method"]), next_url=str(data["next"]), step=str(data["step"]))


def code_refusal(request, user) -> Decision | None:
    """The budget that refuses one more code from this user or address, or None when both admit it."""
    for budget, part in ((CODES_BY_USER, user.pk), (CODES_BY_ADDRESS, client_address(request))):
        decision = budget.consume(part)
        if not decision.allowed:
            return decision
    return None


def keep_recovery_codes(request, codes: list[str], *, next_url: str) -> None:
    request.session[CODES_KEY] = {"codes": codes, "next": next_url}


def pop_recovery_codes(request) -> tuple[list[str], str]:
    """The recovery codes just made and where to go after reading them; gone from the session once
    read."""
    data = request.session.pop(CODES_KEY, None) or {}
    return list(data.get("codes") or []), str(data.get("next") or "")


def _hold(request, user, *, method: str, next_url: str, step: str) -> HttpResponse:
    # A new session key for the half-signed-in state, as Django's login() gives a signed-in one.
    request.session.cycle_key()
    request.session[PENDING_KEY] = {
        "user": user.pk,
        "method": method,
        "next": next_url,
        "step": step,
        "at": time.time(),
    }
    name = "console:login-code" if step == "code" else "console:login-enrol"
    return HttpResponseRedirect(reverse(name))


@transaction.atomic
def _record(user, action: str, *, address: str, method: str, reason: str = "", first_factor: str = "") -> int:
    """One audit row per widget of the user's operator rows; how many were written."""
    changes = {"address": {"from": None, "to": address}, "method": {"from": None, "to": method}}
    if first_factor:
        changes["first_factor"] = {"from": None, "to": first_factor}
    if reason:
        changes["reason"] = {"from": None, "to": reason}
    written = 0
    for agent in access.operator_rows(user):
        audit.record(
            widget=agent.widget,
            action=action,
            target_type="agent",
            target_id=agent.pk,
            changes=changes,
            # Who failed to sign in is not known; a sign-in is the agent's own act.
            actor=audit.agent_actor(agent) if action == SIGNED_IN else audit.SYSTEM,
        )
        written += 1
    return written

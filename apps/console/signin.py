"""The console's one way in after a first factor (a password, or single sign-on): every way of
proving who one is ends in `first_factor_passed` or `first_factor_failed`, so the second step and
the sign-in audit apply to all of them alike."""

from __future__ import annotations

import logging

from django.http import HttpResponse, HttpResponseRedirect

from . import services

log = logging.getLogger(__name__)


def first_factor_passed(request, user, *, method: str, next_url: str) -> HttpResponse:
    """`user` proved the first factor by `method` (`password`, `oidc`): sign in and go on to
    `next_url` (a console path the caller checked)."""
    services.sign_in(request, user)
    return HttpResponseRedirect(next_url)


def first_factor_failed(request, *, email: str, method: str, reason: str) -> None:
    """A first factor was refused for `email`: a log line."""
    log.info("console sign-in refused: method=%s reason=%s", method, reason)

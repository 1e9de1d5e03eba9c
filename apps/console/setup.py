"""The first run in the browser: while no account exists, `/setup/?code=<code>` creates the first
account, its widget and the owner who signs in to the console.

SECURITY: the code is the only credential of the page, and only the web process's log shows it. It
is an HMAC of SECRET_KEY and a random nonce kept in one row (`SetupCode`): every web process of one
database prints the same code, a new database (or a new SECRET_KEY) another, and nobody can derive it
without the key and the row. The setup that creates the first account deletes the row under its lock,
so the code dies with it and two concurrent submissions end as one account and one 404. Once any
account exists the page answers 404 whatever the code.
"""

from __future__ import annotations

import logging
import secrets

from django.db import connections, transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from apps.agents import services as agent_services
from apps.agents.models import Agent
from apps.core import services as core_services
from apps.core.errors import AppError
from apps.core.models import Account
from apps.widget import services as widget_services

from .models import SetupCode

logger = logging.getLogger(__name__)

SETUP_PATH = "/setup/"
_ROW = 1
_SALT = "apps.console.setup"


class SetupClosed(AppError):
    """The first-run page is closed: an account exists, or the code is wrong."""

    status, code, title = 404, "not_found", "Not found"


class EmailTaken(AppError):
    status, code, title = 409, "email_taken", "E-mail taken"


def _code_of(nonce: str) -> str:
    return salted_hmac(_SALT, nonce, algorithm="sha256").hexdigest()[:32]


def is_open() -> bool:
    """Whether the first run is still to be done (no account exists)."""
    return not Account.objects.exists()


def current_code() -> str | None:
    """The setup code while no account exists (the row made once, by whichever process asks first),
    else None."""
    if not is_open():
        return None
    row, _ = SetupCode.objects.get_or_create(pk=_ROW, defaults={"nonce": secrets.token_hex(32)})
    return _code_of(row.nonce)


def code_matches(code: str | None) -> bool:
    """Whether `code` is the current setup code (compared in constant time); False once any account
    exists or before any process made the code."""
    if not code or not is_open():
        return False
    row = SetupCode.objects.filter(pk=_ROW).first()
    return row is not None and constant_time_compare(code, _code_of(row.nonce))


def announce() -> str | None:
    """Log the first-run page's address; nothing once an account exists. Never raises: a database
    not migrated yet is said in the log instead (the page is optional, the server's start is not).
    Returns the code printed."""
    try:
        code = current_code()
    except Exception:
        logger.warning("First run: no setup code (is the database migrated?)", exc_info=True)
        return None
    if code is not None:
        logger.warning(
            "First run: open %s?code=%s to create the owner's account (shown while no account exists)",
            SETUP_PATH,
            code,
        )
    return code


def announce_at_start() -> None:
    """`announce` once per web process at its start (config.asgi's lifespan start-up), in a thread
    of its own: that thread's database connection is closed after it."""
    try:
        announce()
    finally:
        connections.close_all()


@transaction.atomic
def complete_setup(*, code: str, name: str, email: str, password: str, widget_name: str) -> Agent:
    """Create the first account (the owner `name` <`email`>), its widget `widget_name` with the API on
    and the owner's agent (role owner) with the console `password`; the code dies. The caller has
    validated the values (SetupInput). SetupClosed when the code is wrong or an account exists by
    the time the row is locked; EmailTaken when a Django user (an admin) has the address already."""
    row = SetupCode.objects.select_for_update().filter(pk=_ROW).first()
    if row is None or not constant_time_compare(code, _code_of(row.nonce)) or not is_open():
        raise SetupClosed()
    if core_services.user_with_email(email) is not None:
        raise EmailTaken(
            "A user with this e-mail exists already.",
            errors={"email": ["A user with this e-mail exists already; choose another address."]},
        )
    account = core_services.get_or_create_account(email=email, name=name)
    widget = core_services.add_widget(account=account, name=widget_name, enable_api=True)
    # The chat window's title too, and what `{{widget.name}}` in a canned response fills in.
    widget_services.update_settings(widget=widget, body={"widget_name": widget_name})
    owner = Agent.objects.get(widget=widget, user=account.user, is_owner=True)
    owner = agent_services.set_console_password(widget=widget, agent=owner, password=password)
    row.delete()
    return owner

"""The support surface gate: every support call passes it before anything else of the support
logic (after authentication and the route scope), checked at request time against the stored
configuration, in the spec's order:

1. no configuration, support off, or no token allowed -> 503 support_api_disabled
2. this token not listed                                -> 403 token_not_allowed
3. caller not on the allowlist (no valid entry: nobody) -> 403 ip_not_allowed
4. operator missing, not human, suspended or foreign    -> 503 support_operator_not_configured

SECURITY: the caller's address is REMOTE_ADDR, or the TRUSTED_PROXY_HOPS rule where set (the same
rule as the visitor API); it is never taken from a header otherwise.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from apps.agents.models import Agent
from apps.chats.selectors import client_address
from apps.core.models import ApiToken, Widget

from .config import valid_networks
from .errors import IpNotAllowed, SupportApiDisabled, SupportOperatorNotConfigured, TokenNotAllowed
from .models import SupportConfig


@dataclass(frozen=True)
class Passed:
    config: SupportConfig
    operator: Agent
    address: str


def check(*, widget: Widget, token: ApiToken, address: str) -> Passed:
    config = SupportConfig.objects.select_related("operator").filter(widget=widget).first()
    if config is None or not config.enabled or not config.allowed_tokens:
        raise SupportApiDisabled("The support API is off for this widget.")
    if token.prefix not in config.allowed_tokens:
        raise TokenNotAllowed("This token is not allowed to use the support API of this widget.")
    if not _address_allowed(address, valid_networks(config.ip_allowlist)):
        raise IpNotAllowed("The caller's address is not on the support IP allowlist.")
    operator = config.operator
    if (
        operator is None
        or operator.widget_id != widget.pk
        or operator.type != Agent.Type.HUMAN
        or operator.status == Agent.Status.BANNED
    ):
        raise SupportOperatorNotConfigured("The widget has no active human support operator configured.")
    return Passed(config=config, operator=operator, address=address)


def _address_allowed(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)


def check_request(request) -> Passed:
    return check(widget=request.widget, token=request.auth, address=client_address(request))

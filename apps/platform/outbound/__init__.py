"""The one guarded outbound HTTP client.

SECURITY: every call to an address a user can influence (webhooks, file fetch by url, LLM
``base_url``, crawler, messenger URLs) goes through this module and nowhere else. It:

- refuses any URL whose scheme is not allowed (https only by default), that carries userinfo, or
  that has no host;
- resolves the host once, refuses the whole URL if ANY resolved address is refused (a hostname
  answering with one public and one private address is an attacker's rebinding setup), and connects
  to the exact address it checked (pinning), while TLS SNI, certificate verification and the
  ``Host`` header keep using the hostname;
- never follows redirects on its own; with ``max_redirects`` it follows at most that many hops by
  hand, each hop going through the same checks;
- always sets timeouts, ignores proxy/netrc environment variables (``trust_env=False``) but honours
  ``REQUESTS_CA_BUNDLE`` for verification, and caps the response body.

``settings.OUTBOUND_ALLOW_LOOPBACK`` (default False, read at every call) lets a local demo or a test
reach 127.0.0.0/8 and ::1, and nothing else. ``settings.AI_PRIVATE_HOSTS`` (policy.PrivateHosts)
opens the owner's listed model servers to the AI provider transports and credential checks only,
which pass it explicitly; every other caller keeps the plain policy.

requests-hardened provides the base session (redirects off, default timeout). Its IP filter is not
used: it checks only the first resolved address, lets ``::/96`` and 6to4/NAT64-embedded private
addresses through or refuses them wholesale, and resolves through a path tests cannot replace.

The package, one module per job: `policy` (URL and address rules, resolution, pinning), `deadline`
(the whole-call watchdog), `client` (the guarded session and `request()`), `httpx_transport` (the
LLM SDK transport), `errors`. Import from the package; `httpx2_transport` (the twin for SDKs built
on httpx2: OpenAI, Anthropic) is imported from its module, so processes without an LLM call do not
load httpx2.
"""

from .client import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from .client import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from .client import GuardedResponse as GuardedResponse
from .client import GuardedSession as GuardedSession
from .client import get_session as get_session
from .client import request as request
from .deadline import WATCHDOG_TICK as WATCHDOG_TICK
from .errors import OutboundBlocked as OutboundBlocked
from .errors import OutboundError as OutboundError
from .httpx_transport import GuardedAsyncHTTPXTransport as GuardedAsyncHTTPXTransport
from .httpx_transport import GuardedHTTPXTransport as GuardedHTTPXTransport
from .httpx_transport import guarded_async_httpx_client as guarded_async_httpx_client
from .httpx_transport import guarded_httpx_client as guarded_httpx_client
from .policy import HTTPS_ONLY as HTTPS_ONLY
from .policy import PrivateHosts as PrivateHosts
from .policy import address_refusal_reason as address_refusal_reason
from .policy import ai_private_hosts as ai_private_hosts
from .policy import check_url as check_url
from .policy import is_address_allowed as is_address_allowed
from .policy import parse_ip_literal as parse_ip_literal
from .policy import pin_address as pin_address
from .policy import resolve_host as resolve_host
from .policy import safe_url as safe_url

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "GuardedAsyncHTTPXTransport",
    "GuardedHTTPXTransport",
    "GuardedResponse",
    "GuardedSession",
    "HTTPS_ONLY",
    "OutboundBlocked",
    "OutboundError",
    "PrivateHosts",
    "address_refusal_reason",
    "ai_private_hosts",
    "check_url",
    "get_session",
    "guarded_async_httpx_client",
    "guarded_httpx_client",
    "is_address_allowed",
    "parse_ip_literal",
    "pin_address",
    "request",
    "resolve_host",
    "safe_url",
]

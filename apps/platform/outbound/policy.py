"""The address policy: which URLs and resolved addresses an outbound call may reach, resolution,
and pinning (the connection goes to the exact address that was checked)."""

from __future__ import annotations

import functools
import ipaddress
import logging
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from urllib3.util.connection import allowed_gai_family

from apps.platform.numbers import parse_int

from .errors import OutboundBlocked, OutboundError

logger = logging.getLogger("apps.platform.outbound")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

HTTPS_ONLY: frozenset[str] = frozenset({"https"})
_SUPPORTED_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


# --- address policy -------------------------------------------------------------------------------

_net = ipaddress.ip_network

# Order matters only for the reason reported: the first match names the refusal.
# The clouds' instance and task metadata, credential and host-agent services: an address here hands
# out the machine's own credentials. 168.63.129.16 (Azure's host agent) is a public address, so it
# must be named; the others are named so that no exception of the policy (AI_PRIVATE_HOSTS) opens them.
_CLOUD_METADATA_V4 = (
    "169.254.169.254/32",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle, Hetzner, ...
    "169.254.169.253/32",  # AWS's DNS resolver
    "169.254.169.123/32",  # AWS's time service
    "169.254.170.2/32",  # AWS ECS task credentials
    "169.254.170.23/32",  # AWS EKS pod identity
    "169.254.0.23/32",  # Tencent Cloud
    "168.63.129.16/32",  # Azure's host agent (WireServer)
    "100.100.100.200/32",  # Alibaba Cloud
    "192.0.0.192/32",  # Oracle Cloud (classic)
)
_CLOUD_METADATA_V6 = ("fd00:ec2::/32",)  # AWS's IPv6 metadata, DNS, time and pod identity (fd00:ec2::254, ::23)

_REFUSED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    *((_net(network), "cloud_metadata") for network in _CLOUD_METADATA_V4),
    (_net("0.0.0.0/8"), "unspecified"),
    (_net("10.0.0.0/8"), "private"),
    (_net("100.64.0.0/10"), "cgnat"),
    (_net("127.0.0.0/8"), "loopback"),
    (_net("169.254.0.0/16"), "link_local"),
    (_net("172.16.0.0/12"), "private"),
    (_net("192.0.0.0/24"), "ietf_protocol"),
    (_net("192.0.2.0/24"), "documentation"),
    (_net("192.88.99.0/24"), "6to4_relay"),
    (_net("192.168.0.0/16"), "private"),
    (_net("198.18.0.0/15"), "benchmark"),
    (_net("198.51.100.0/24"), "documentation"),
    (_net("203.0.113.0/24"), "documentation"),
    (_net("224.0.0.0/4"), "multicast"),
    (_net("255.255.255.255/32"), "broadcast"),
    (_net("240.0.0.0/4"), "reserved"),
)

_REFUSED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    *((_net(network), "cloud_metadata") for network in _CLOUD_METADATA_V6),
    (_net("::/128"), "unspecified"),
    (_net("::1/128"), "loopback"),
    (_net("::/96"), "ipv4_compatible"),
    (_net("::ffff:0:0:0/96"), "ipv4_translated"),
    (_net("64:ff9b:1::/48"), "nat64_local"),
    (_net("100::/64"), "discard"),
    (_net("2001::/32"), "teredo"),
    (_net("2001:db8::/32"), "documentation"),
    (_net("2001::/23"), "ietf_protocol"),
    (_net("3fff::/20"), "documentation"),
    (_net("5f00::/16"), "srv6"),
    (_net("fc00::/7"), "unique_local"),
    (_net("fe80::/10"), "link_local"),
    (_net("fec0::/10"), "site_local"),
    (_net("ff00::/8"), "multicast"),
)

_LOOPBACK_V4 = _net("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")
_NAT64_WELL_KNOWN = _net("64:ff9b::/96")
_GLOBAL_UNICAST_V6 = _net("2000::/3")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address really reaches, for the forms that carry one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "ipv4_mapped"
    if ip in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "nat64"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    return None


# Pure functions of their arguments, called on every outbound call (a webhook engine makes thousands a
# second, mostly to the same few URLs and addresses): cached per process, bounded.
CACHED = 4096


@functools.lru_cache(maxsize=CACHED)
def address_refusal_reason(ip: IPAddress | str, *, allow_loopback: bool) -> str | None:
    """Why `ip` may not be contacted, or None when it is a public unicast address.

    `allow_loopback` opens 127.0.0.0/8 and ::1 only. Addresses that merely embed a loopback IPv4
    (IPv4-mapped, NAT64, 6to4) stay refused: the switch is for a literal local receiver.
    """
    if isinstance(ip, str):
        ip = ipaddress.ip_address(ip)
    if ip.version == 6 and ip.scope_id:
        return "scoped_address"
    if ip in _LOOPBACK_V4 or ip == _LOOPBACK_V6:
        return None if allow_loopback else "loopback"
    if ip.version == 6:
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            v4, form = embedded
            inner = address_refusal_reason(v4, allow_loopback=False)
            return f"{form}:{inner}" if inner else None
        for network, reason in _REFUSED_V6:
            if ip in network:
                return reason
        if ip not in _GLOBAL_UNICAST_V6:
            return "not_global_unicast"
        if ip.is_site_local:
            return "site_local"
    else:
        for network, reason in _REFUSED_V4:
            if ip in network:
                return reason
    # Belt and braces: whatever the standard library knows to be special stays refused too.
    if ip.is_multicast:
        return "multicast"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link_local"
    if ip.is_reserved:
        return "reserved"
    if ip.is_private or not ip.is_global:
        return "not_global"
    return None


def is_address_allowed(ip: IPAddress, *, allow_loopback: bool) -> bool:
    """True when `ip` is a public unicast address (or loopback with `allow_loopback`)."""
    return address_refusal_reason(ip, allow_loopback=allow_loopback) is None


# --- the owner's own model servers (AI credentials only) ----------------------------------------

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# What a listed range never opens: loopback (this machine: its admin, metrics and the other
# tenants' processes; a test or demo opens it with OUTBOUND_ALLOW_LOOPBACK, for every caller),
# addresses that are not a machine on a network (metadata services, unspecified, multicast,
# broadcast, a zone-scoped address) and the IPv6 forms that merely embed an IPv4 address (their
# refusal reason names the form: "ipv4_mapped:private", ...).
_NEVER_OPENED = frozenset({"loopback", "cloud_metadata", "unspecified", "multicast", "broadcast", "scoped_address"})
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")
_PORT = re.compile(r"^[0-9]{1,5}$")

# A listed port, or None: the entry names no port and opens every one.
Port = int | None


@dataclass(frozen=True)
class PrivateHosts:
    """Where an owner's self-hosted model servers live (settings.AI_PRIVATE_HOSTS): host names and
    address ranges, each on one port or on every port, that an AI credential's `base_url` may reach
    although the address policy refuses them.

    SECURITY: an exception of the one policy, passed explicitly by the AI provider transports and
    the credential save-time check, and by no other caller (webhooks, file fetch, the crawler and
    messengers never see it). It opens an address only when it lies in a listed range on a listed
    port, so a listed name that resolves to an unlisted private address is still refused; it never
    opens loopback or a metadata address; and it allows `http://` only for a host listed by name or
    an address literal inside a listed range, on a listed port.
    """

    names: frozenset[tuple[str, Port]]
    networks: tuple[tuple[IPNetwork, Port], ...]

    def __bool__(self) -> bool:
        return bool(self.names or self.networks)

    def lists_host(self, host: str, port: int) -> bool:
        """True for a host listed by name, or an address literal inside a listed range, on `port`."""
        literal = parse_ip_literal(host)
        if literal is not None:
            return self.contains(literal, port)
        name = host.lower().rstrip(".")
        return (name, None) in self.names or (name, port) in self.names

    def contains(self, ip: IPAddress, port: int) -> bool:
        return any(
            ip.version == network.version and ip in network and listed in (None, port)
            for network, listed in self.networks
        )

    def opens(self, ip: IPAddress, reason: str, port: int) -> bool:
        """True when the policy's refusal of `ip` (for `reason`) on `port` is lifted by a listed range."""
        return reason not in _NEVER_OPENED and ":" not in reason and self.contains(ip, port)


NO_PRIVATE_HOSTS = PrivateHosts(frozenset(), ())


def _split_port(entry: str) -> tuple[str, str | None]:
    """(host or range, port or None) of an entry: `host:port`, `10.0.0.0/24:8000`, `[fd00::7]:8000`;
    an IPv6 address or range without brackets names no port."""
    if entry.startswith("["):
        inside, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return entry, None  # refused as neither a name nor a range
        return inside, rest[1:] if rest else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, None


def _is_loopback(network: IPNetwork) -> bool:
    if network.version == 4:
        return network.subnet_of(_LOOPBACK_V4)
    return network.num_addresses == 1 and network[0] == _LOOPBACK_V6


@functools.lru_cache(maxsize=8)
def parse_private_hosts(entries: tuple[str, ...], *, allow_loopback: bool = False) -> PrivateHosts:
    """The PrivateHosts of AI_PRIVATE_HOSTS' entries: an address (`192.168.1.10`), a range
    (`10.0.0.0/8`, `fd00::/8`) or a host name (`ollama.lan`), each optionally with the one port it
    opens (`192.168.1.10:11434`, `[fd00::7]:8000`, `10.0.0.0/24:8000`). ImproperlyConfigured names a
    bad one, and a loopback entry unless `allow_loopback` (OUTBOUND_ALLOW_LOOPBACK) has opened
    loopback already: this setting never does."""
    names: set[tuple[str, Port]] = set()
    networks: list[tuple[IPNetwork, Port]] = []
    for raw in entries:
        entry = raw.strip().lower()
        if not entry:
            continue
        host, port_text = _split_port(entry)
        port: Port = None
        if port_text is not None:
            if not _PORT.match(port_text) or not 0 < int(port_text) < 65536:
                raise ImproperlyConfigured(f"AI_PRIVATE_HOSTS: {raw!r} names no port (1 to 65535) after the colon")
            port = int(port_text)
        try:
            network = ipaddress.ip_network(host, strict=False)
        except ValueError:
            network = None
        if network is not None:
            if network.prefixlen == 0:
                raise ImproperlyConfigured(f"AI_PRIVATE_HOSTS: {raw!r} would open every address")
            if not allow_loopback and _is_loopback(network):
                raise ImproperlyConfigured(f"AI_PRIVATE_HOSTS: {raw!r} is loopback, which this setting never opens")
            networks.append((network, port))
        elif _HOST_NAME.match(host.rstrip(".")) and parse_ip_literal(host) is None:
            names.add((host.rstrip("."), port))
        else:
            raise ImproperlyConfigured(f"AI_PRIVATE_HOSTS: {raw!r} is neither a host name nor an address range")
    return PrivateHosts(frozenset(names), tuple(networks))


def ai_private_hosts() -> PrivateHosts:
    """settings.AI_PRIVATE_HOSTS, read at every call (a pooled transport outlives a settings change
    in tests)."""
    if not settings.configured:
        return NO_PRIVATE_HOSTS
    value = getattr(settings, "AI_PRIVATE_HOSTS", None) or ()
    if isinstance(value, str):
        value = value.split(",")
    return parse_private_hosts(tuple(value), allow_loopback=_allow_loopback())


# --- URLs, numeric hosts and resolution ----------------------------------------------------------

_LEGACY_IPV4_CHARS = re.compile(r"^[0-9][0-9a-fA-FxX.]*$")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")


def safe_url(url: str) -> str:
    """scheme://host[:port]/path of `url`: no userinfo, query or fragment, fit for logs."""
    if isinstance(url, str):
        return _safe_url(url)
    return _safe_url.__wrapped__(url)


@functools.lru_cache(maxsize=CACHED)
def _safe_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "<invalid url>"
    if parts.scheme.lower() not in _SUPPORTED_SCHEMES:
        return f"{parts.scheme}:" if parts.scheme else "<relative url>"
    try:
        port = parts.port
    except ValueError:
        port = None
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"


@functools.lru_cache(maxsize=CACHED)
def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a numeric host means, in every form a resolver accepts; None for a name.

    Handles brackets, IPv6 and the legacy IPv4 spellings of inet_aton: decimal ``2130706433``,
    octal ``0177.0.0.1``, hex ``0x7f.0.0.1``, short ``127.1``, ``0``. Parsing here, not in the
    resolver, means a replaced resolver (tests) cannot be handed a numeric host to reinterpret.
    """
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    if host.endswith("."):
        host = host[:-1]
    if not _LEGACY_IPV4_CHARS.match(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to, in resolver order. Replaced in tests.

    Raises OutboundError("resolve_failed") when the name does not resolve.
    """
    family = allowed_gai_family()
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        try:
            infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise OutboundError("resolve_failed", detail=type(exc).__name__) from None
    addresses: list[IPAddress] = []
    for af, _type, _proto, _canon, sockaddr in infos:
        if af not in (socket.AF_INET, socket.AF_INET6):
            continue
        ip = ipaddress.ip_address(sockaddr[0])
        if ip not in addresses:
            addresses.append(ip)
    return addresses


def _allow_loopback() -> bool:
    if not settings.configured:
        return False
    # Only a real True opens loopback: a stray "0" string must not.
    return getattr(settings, "OUTBOUND_ALLOW_LOOPBACK", False) is True


def pin_address(
    host: str, port: int, *, allow_loopback: bool | None = None, private_hosts: PrivateHosts | None = None
) -> IPAddress:
    """Resolve `host` once and return the address to connect to.

    SECURITY: every resolved address is checked and any refused one refuses the host, so a name
    answering with both a public and a private address cannot slip through. The caller must connect
    to the returned address and must not resolve `host` again. `private_hosts` (AI provider calls
    only) lifts the refusal of addresses inside its listed ranges, and of nothing else.
    """
    if allow_loopback is None:
        allow_loopback = _allow_loopback()
    if not host:
        raise OutboundBlocked("missing_host")
    literal = parse_ip_literal(host)
    if literal is not None:
        candidates: list[Any] = [literal]
    else:
        try:
            candidates = list(resolve_host(host, port))
        except (OSError, UnicodeError) as exc:
            raise OutboundError("resolve_failed", detail=type(exc).__name__) from None
    if not candidates:
        raise OutboundError("resolve_failed", detail="no addresses")
    addresses: list[IPAddress] = []
    for candidate in candidates:
        try:
            ip = candidate if isinstance(candidate, IPAddress) else ipaddress.ip_address(str(candidate))
        except ValueError:
            raise OutboundBlocked("invalid_address", address=str(candidate)) from None
        reason = address_refusal_reason(ip, allow_loopback=allow_loopback)
        if reason is not None and private_hosts and private_hosts.opens(ip, reason, port):
            reason = None
        if reason is not None:
            raise OutboundBlocked("address_not_allowed", address=f"{ip} ({reason})")
        addresses.append(ip)
    return addresses[0]


def check_url(
    url: str, *, allowed_schemes: Iterable[str] = HTTPS_ONLY, private_hosts: PrivateHosts | None = None
) -> SplitResult:
    """Refuse a URL on its shape alone, before anything is resolved. `private_hosts` (AI provider
    calls only) also allows `http` for a host it lists.

    Raises OutboundBlocked with reason invalid_url, scheme_not_allowed, userinfo_not_allowed,
    missing_host or invalid_port.
    """
    if not isinstance(url, str):
        raise OutboundBlocked("invalid_url")
    schemes = frozenset(allowed_schemes)
    if private_hosts and "http" not in schemes and _listed_http_host(url, private_hosts):
        schemes |= {"http"}
    return _checked_url(url, schemes)


def _listed_http_host(url: str, private_hosts: PrivateHosts) -> bool:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port or _DEFAULT_PORTS["http"]
    except ValueError:
        return False
    return parts.scheme.lower() == "http" and bool(host) and private_hosts.lists_host(host, port)


@functools.lru_cache(maxsize=CACHED)
def _checked_url(url: str, allowed_schemes: frozenset[str]) -> SplitResult:
    """`check_url` of a string (a refusal is raised, never cached)."""
    if _CONTROL_OR_SPACE.search(url):
        raise OutboundBlocked("invalid_url")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise OutboundBlocked("invalid_url") from None
    safe = safe_url(url)
    allowed = {scheme.lower() for scheme in allowed_schemes} & _SUPPORTED_SCHEMES
    if parts.scheme.lower() not in allowed:
        raise OutboundBlocked("scheme_not_allowed", url=safe)
    if "\\" in parts.netloc:
        raise OutboundBlocked("invalid_url", url=safe)
    if "@" in parts.netloc:
        raise OutboundBlocked("userinfo_not_allowed", url=safe)
    if not parts.hostname:
        raise OutboundBlocked("missing_host", url=safe)
    try:
        port = parts.port
    except ValueError:
        raise OutboundBlocked("invalid_port", url=safe) from None
    if port == 0:  # no service listens on port 0; a connect to it picks nothing a tenant meant
        raise OutboundBlocked("invalid_port", url=safe)
    return parts


def _log_blocked(exc: OutboundBlocked, url: str) -> None:
    if exc.url is None:
        exc.url = safe_url(url)
    logger.warning(
        "outbound blocked (%s): %s%s",
        exc.reason,
        exc.url,
        f" -> {exc.address}" if exc.address else "",
        extra={"outbound_reason": exc.reason, "outbound_url": exc.url, "outbound_address": exc.address},
    )


def _pin_target(hostname: str, scheme: str, port: int | None) -> tuple[IPAddress, str, str]:
    """Resolve and check `hostname` (pin_address) and return the address to connect to, the name
    SNI and certificate matching must use, and the Host header."""
    default_port = _DEFAULT_PORTS[scheme]
    ip = pin_address(hostname, port or default_port)
    literal = parse_ip_literal(hostname)
    name = str(literal) if literal is not None else hostname
    host_header = f"[{name}]" if ":" in name else name
    if port is not None and port != default_port:
        host_header = f"{host_header}:{port}"
    return ip, name, host_header


def _check_declared_length(headers: Mapping[str, str], max_bytes: int, safe: str) -> None:
    declared = headers.get("Content-Length")
    try:
        too_large = declared is not None and parse_int(declared.strip()) > max_bytes
    except ValueError:
        too_large = False  # not a length (a client ignores it too); the read below stays capped
    if too_large:
        logger.info("outbound %s: declared body of %s bytes over %d", safe, declared, max_bytes)
        raise OutboundError("response_too_large", url=safe)

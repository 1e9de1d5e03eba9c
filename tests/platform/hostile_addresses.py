"""Hostile URLs the outbound guard must refuse before any socket is opened.

Each case names the URL, what a (mocked) resolver answers for its hostname, the schemes the caller
allows and the refusal reason expected. Numeric hosts are never given to the resolver: the tests'
resolver answers a public address for any unknown name, so a numeric form that slipped through to
it would be let through and the case would fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:4700:4700::1111"
BOTH_SCHEMES = frozenset({"http", "https"})
HTTPS_ONLY = frozenset({"https"})

ADDRESS = "address_not_allowed"
SCHEME = "scheme_not_allowed"
USERINFO = "userinfo_not_allowed"


@dataclass(frozen=True)
class HostileCase:
    id: str
    url: str
    reason: str
    resolves_to: dict[str, list[str]] = field(default_factory=dict)
    allowed_schemes: frozenset[str] = BOTH_SCHEMES


HOSTILE_CASES: tuple[HostileCase, ...] = (
    # Loopback in every numeric spelling a resolver accepts.
    HostileCase("decimal-ipv4", "http://2130706433/", ADDRESS),
    HostileCase("octal-ipv4", "https://0177.0.0.1/", ADDRESS),
    HostileCase("hex-dotted-ipv4", "https://0x7f.0.0.1/", ADDRESS),
    HostileCase("hex-ipv4", "https://0x7f000001/", ADDRESS),
    HostileCase("hex-short-ipv4", "https://0x7f.1/", ADDRESS),
    HostileCase("short-ipv4", "https://127.1/", ADDRESS),
    HostileCase("loopback-trailing-dot", "https://127.0.0.1./", ADDRESS),
    HostileCase("loopback-with-port", "https://127.0.0.1:8443/admin", ADDRESS),
    HostileCase("loopback-other", "https://127.255.255.254/", ADDRESS),
    HostileCase("zero", "https://0/", ADDRESS),
    HostileCase("unspecified-ipv4", "https://0.0.0.0/", ADDRESS),
    HostileCase("unspecified-ipv6", "https://[::]/", ADDRESS),
    HostileCase("loopback-ipv6", "https://[::1]/", ADDRESS),
    HostileCase("mapped-loopback-dotted", "https://[::ffff:127.0.0.1]/", ADDRESS),
    HostileCase("mapped-loopback-hex", "https://[::ffff:7f00:1]/", ADDRESS),
    # Cloud metadata, directly and through every IPv4-in-IPv6 form.
    HostileCase("metadata", "https://169.254.169.254/latest/meta-data/", ADDRESS),
    HostileCase("metadata-http", "http://169.254.169.254/latest/meta-data/", ADDRESS),
    HostileCase("metadata-decimal", "https://2852039166/", ADDRESS),
    HostileCase("metadata-octal", "https://0251.0376.0251.0376/", ADDRESS),
    HostileCase("metadata-hex", "https://0xa9fea9fe/", ADDRESS),
    HostileCase("metadata-alibaba", "https://100.100.100.200/", ADDRESS),
    HostileCase("metadata-aws-ipv6", "https://[fd00:ec2::254]/", ADDRESS),
    HostileCase("metadata-mapped", "https://[::ffff:169.254.169.254]/", ADDRESS),
    HostileCase("metadata-ipv4-compatible", "https://[::a9fe:a9fe]/", ADDRESS),
    HostileCase("metadata-ipv4-translated", "https://[::ffff:0:a9fe:a9fe]/", ADDRESS),
    HostileCase("metadata-nat64", "https://[64:ff9b::a9fe:a9fe]/", ADDRESS),
    HostileCase("nat64-local-use", "https://[64:ff9b:1::a00:1]/", ADDRESS),
    HostileCase("metadata-6to4", "https://[2002:a9fe:a9fe::]/", ADDRESS),
    HostileCase("teredo", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", ADDRESS),
    # Private, shared, special-purpose IPv4.
    HostileCase("private-10", "https://10.0.0.1/", ADDRESS),
    HostileCase("private-172", "https://172.16.0.1/", ADDRESS),
    HostileCase("private-192", "https://192.168.1.1/", ADDRESS),
    HostileCase("cgnat", "https://100.64.0.1/", ADDRESS),
    HostileCase("multicast-ipv4", "https://224.0.0.1/", ADDRESS),
    HostileCase("broadcast", "https://255.255.255.255/", ADDRESS),
    HostileCase("reserved-240", "https://240.0.0.1/", ADDRESS),
    HostileCase("documentation-ipv4", "https://192.0.2.1/", ADDRESS),
    HostileCase("benchmark-ipv4", "https://198.18.0.1/", ADDRESS),
    # Special-purpose IPv6.
    HostileCase("link-local-ipv6", "https://[fe80::1]/", ADDRESS),
    HostileCase("unique-local-ipv6", "https://[fc00::1]/", ADDRESS),
    HostileCase("site-local-ipv6", "https://[fec0::1]/", ADDRESS),
    HostileCase("multicast-ipv6", "https://[ff02::1]/", ADDRESS),
    HostileCase("documentation-ipv6", "https://[2001:db8::1]/", ADDRESS),
    # Hostnames whose resolution is hostile.
    HostileCase("name-to-private", "https://internal.test/", ADDRESS, {"internal.test": ["10.0.0.5"]}),
    HostileCase(
        "name-to-metadata",
        "http://metadata.google.internal/computeMetadata/v1/",
        ADDRESS,
        {"metadata.google.internal": ["169.254.169.254"]},
    ),
    HostileCase("localhost-name", "https://localhost/", ADDRESS, {"localhost": ["127.0.0.1", "::1"]}),
    HostileCase(
        "rebinding-public-then-private",
        "https://rebind.test/",
        ADDRESS,
        {"rebind.test": [PUBLIC_V4, "10.0.0.5"]},
    ),
    HostileCase(
        "rebinding-ipv6-unique-local",
        "https://rebind6.test/",
        ADDRESS,
        {"rebind6.test": [PUBLIC_V6, "fd12:3456::1"]},
    ),
    HostileCase(
        "name-to-mapped-metadata",
        "https://mapped.test/",
        ADDRESS,
        {"mapped.test": ["::ffff:169.254.169.254"]},
    ),
    HostileCase("name-to-nat64-metadata", "https://nat64.test/", ADDRESS, {"nat64.test": ["64:ff9b::a9fe:a9fe"]}),
    HostileCase("name-to-cgnat", "https://cgnat.test/", ADDRESS, {"cgnat.test": ["100.100.100.200"]}),
    # URL shapes refused before resolution.
    HostileCase("userinfo-user-pass", "https://user:pass@example.com/", USERINFO),
    HostileCase("userinfo-user", "https://user@example.com/", USERINFO),
    HostileCase("userinfo-empty", "https://:@example.com/", USERINFO),
    HostileCase("userinfo-host-confusion", "https://example.com:443@10.0.0.1/", USERINFO),
    HostileCase("backslash-host-confusion", "https://example.com\\@10.0.0.1/", "invalid_url"),
    HostileCase("http-when-https-only", "http://example.com/", SCHEME, allowed_schemes=HTTPS_ONLY),
    HostileCase("javascript", "javascript:alert(1)", SCHEME),
    HostileCase("file", "file:///etc/passwd", SCHEME),
    HostileCase("ftp", "ftp://example.com/pub", SCHEME),
    HostileCase("gopher", "gopher://127.0.0.1:6379/_INFO", SCHEME),
    HostileCase("missing-host", "https:///etc/passwd", "missing_host"),
    HostileCase("header-injection", "https://example.com/\r\nHost: 10.0.0.1", "invalid_url"),
)

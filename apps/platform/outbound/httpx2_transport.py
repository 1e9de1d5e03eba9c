"""The guarded transport for `httpx2` (the HTTP library the OpenAI and Anthropic SDKs are built on
since their 3.x / 2.x releases): the twin of `httpx_transport` on httpx2/httpcore2, with the same
address policy, pinning, TLS context and refusals. The URL is checked before sending, every new
connection is resolved, checked and pinned to the checked address (SNI, certificate and Host keep
the hostname), redirects are never followed, no proxies, unix sockets or environment.

Anthropic's SDK accepts only an httpx2 client, and httpcore2's async pool serves many requests in
flight several times faster than httpcore 1's, which matters for provider calls awaited by an ASGI
web process.
"""

from __future__ import annotations

import httpcore2
import httpx2

from .httpx_transport import guarded_transport_classes

# The same guarded transports as httpx_transport's, built on httpx2/httpcore2.
GuardedHTTPX2Transport, GuardedAsyncHTTPX2Transport = guarded_transport_classes(httpx2, httpcore2, suffix="HTTPX2")

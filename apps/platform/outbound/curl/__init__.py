"""`GuardedSession.send_bytes` and `submit_bytes` on libcurl (pycurl): many small requests in
flight at once, driven by one thread per process, with the same guard as every other call of this
package.

Why libcurl: the webhook engine keeps 16 attempts in flight. On a Python event loop each attempt
costs the loop thread CPU with the interpreter lock held (request objects in Python, TLS through
Python's ssl objects), and the engine's other thread waits for that lock. libcurl builds the request,
does TLS and parses the answer in C with the lock released, so more requests fit in a process's CPU.

The guard, per call, before anything is sent:

- the URL's shape (`check_url`: scheme, userinfo, host, port); libcurl gets a URL rebuilt from the
  checked parts, with the normalised host (an odd numeric form is written as the address it means);
- the host resolved once (on a small resolver pool, so a slow DNS answer holds no other request;
  an address literal on the caller's thread), every address checked (`pin_address`), and the
  connection sent to that exact address whatever host libcurl reads in the URL (`CONNECT_TO` with
  an empty source matches every host); the socket libcurl opens is checked once more against that
  address before it connects (`_open_socket`), so no parser difference can reach another address.
  libcurl reuses a pooled connection only for the same connect-to address and the same host name;
- TLS verification on (`REQUESTS_CA_BUNDLE` honoured, else certifi's bundle, no other CA path); SNI,
  certificate matching and `Host` keep the hostname;
- no redirect followed (a 3xx is the answer), no cookies, no proxy (the environment's variables are
  overridden), no netrc, HTTP and HTTPS only;
- a connect timeout, a read timeout (no byte for that long once the request is sent: enforced by the
  driver), the body capped at `max_bytes` (declared, or streamed and counted after libcurl has undone
  its Content-Encoding: a gzip bomb stops at the cap), and a deadline over the whole call
  (libcurl's own `TIMEOUT_MS`: `deadline_exceeded`), however slowly the peer trickles bytes.

An answer is its status line and headers: once they are complete, a connection that ends while
the body is read (closed or reset by the peer, a TLS peer closing without close_notify, as Python's
`http.server` does, a body short of its Content-Length) still settles the call with that status and
the bytes that came (`GuardedResponse.complete` False when the body fell short). Only the call's own
limits fail it then (deadline, read timeout, size cap). A connection that ends before the headers
are complete is a `connection_error`; a failed handshake or a refused certificate is a `tls_error`.

Each `GuardedSession` has its own libcurl multi handle (its own pooled connections), closed with it.
The driver thread starts on first use and again in a forked child (Celery's prefork pool); it sleeps
in epoll while nothing is in flight.

One module per part: `call` (one request: the callbacks, the socket check, how it settles), `pool`
(a transport's multi handle), `driver` (the process's outbound thread) and `transport`
(`CurlTransport`, what `client` uses). A test that patches a name patches it in the module that
looks it up (`call._open_socket`, `call.is_address_allowed`).
"""

from .call import pycurl_address as pycurl_address
from .driver import RESOLVERS as RESOLVERS
from .pool import CONNECTIONS as CONNECTIONS
from .transport import CurlTransport as CurlTransport

"""The knowledge-base crawler: one crawl run of a widget's configuration (docs/ai/knowledge-base.md).

SECURITY: every request (robots.txt, sitemaps, pages, every redirect hop) goes through the guarded
outbound client (`apps.platform.outbound`) with redirects off; hops are followed here, one at a time,
each checked by the guard's own policy (`check_url`, `pin_address`: a hop to a private address is
refused before anything is sent to it and the page is recorded as failed) and then kept on the
start URLs' hosts. Sitemaps are fetched here and their bytes handed to ultimate-sitemap-parser,
which never fetches anything itself.

Order: robots.txt of each start host (`protego`; our user agent's group, else `*`; a 4xx robots.txt
allows everything, an unreachable one or a 5xx disallows the host, RFC 9309), then its sitemaps
(the `Sitemap:` lines, else `/sitemap.xml`), then breadth first from the start URLs (depth 0) and
the sitemaps' pages (depth 1), following `<a href>` links while the depth is under `max_depth`, at
most `max_pages` fetches. Include/exclude globs are matched against the URL's path and query; a
start URL is always fetched for its links but indexed only when the globs allow it.

Per page: the text (trafilatura) is fingerprinted (sha256); an unchanged fingerprint leaves the
rules alone (no embedding), a changed one replaces `crawl:<url>`'s rules; a 404/410 retires them
at once. At the end of a finished run, pages indexed before that the crawl no longer reached (not
linked, not in a sitemap, disallowed, excluded) are retired too; pages it found but did not fetch
(page cap) and pages that failed keep their rules, and a run that could not reach a robots.txt or a
start URL (an outage, not a site that shrank) retires nothing at the end. An embedding failure fails the page, not the
run. Between pages the run checks whether a write replaced or removed its configuration or cancelled
it (it then stops, `cancelled`): at most the page in flight is fetched after the write.

Slices: a run is a chain of tasks on the `bulk` queue, each working for about SLICE_SECONDS (a host's
robots.txt and sitemaps, or one page, at a time; a page's fetch, redirect hops included, is bounded by
PAGE_DEADLINE) and then saving what is left to do (`Crawl.snapshot`, on the run) and sending the next
slice to the back of the queue. A slow site thus holds a worker slot for one slice at a time, and the
work of other widgets queued meanwhile runs between its slices; a widget has at most one crawl
running, so its crawl holds at most one slot.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from apps.platform import outbound

from . import extract, services
from . import text as kbtext
from .errors import EmbedProviderFailed
from .models import KbCrawlConfig, KbCrawlRun

logger = logging.getLogger(__name__)

USER_AGENT = "ChatWidgetKbCrawler/1.0 (+knowledge-base crawler)"
ROBOTS_AGENT = "ChatWidgetKbCrawler"
MAX_CRAWL_DELAY = 5.0  # seconds; a larger Crawl-delay is honoured up to this
MAX_REDIRECTS = 5
PAGE_MAX_BYTES = 5 * 1024 * 1024
ROBOTS_MAX_BYTES = 512 * 1024
SITEMAP_MAX_BYTES = 10 * 1024 * 1024
MAX_SITEMAPS_PER_HOST = 10
MAX_URL_CHARS = 594  # `crawl:` + url fits KbChunk.source_ref
PAGE_DEADLINE = 30.0  # seconds for one page, every redirect hop included
# A slice ends at the first step that finishes after this many seconds (at least one step a slice).
SLICE_SECONDS = 20.0
HTML_TYPES = ("text/html", "application/xhtml+xml")
DISALLOW_ALL = "User-agent: *\nDisallow: /\n"

# Replaced in tests so a Crawl-delay is observed without waiting.
sleep = time.sleep


class _Stop(Exception):
    """The run's configuration was replaced or removed, or a write ended the run."""


def normalise(url: str) -> str | None:
    """The canonical form of an https URL (no fragment, lower-case host, no default port, `/` for an
    empty path), or None for anything else."""
    try:
        url, _ = urldefrag(url.strip())
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() != "https" or not parts.hostname or "@" in parts.netloc:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, 443) else f"{host}:{port}"
    normalised = urlunsplit(("https", netloc, parts.path or "/", parts.query, ""))
    return normalised if len(normalised) <= MAX_URL_CHARS else None


def resolve(base: str, reference: str) -> str | None:
    """`reference` (an `href`, a `Location`) read against `base`, or None when the result is no URL
    at all (an unclosed `[` host): a page's markup or headers never end a crawl."""
    try:
        return urljoin(base, reference.strip())
    except ValueError:
        return None


def host_key(url: str) -> str:
    return urlsplit(url).netloc


def path_and_query(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def allowed_by_globs(url: str, include: list[str], exclude: list[str]) -> bool:
    target = path_and_query(url)
    if include and not any(fnmatch.fnmatchcase(target, glob) for glob in include):
        return False
    return not any(fnmatch.fnmatchcase(target, glob) for glob in exclude)


def _sitemap_text(content: bytes) -> str:
    """A sitemap's text; a gzipped one (`.xml.gz`) inflated up to SITEMAP_MAX_BYTES."""
    if content[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=31)
        content = inflater.decompress(content, SITEMAP_MAX_BYTES)
    return content.decode("utf-8", errors="replace")


@dataclass
class _Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    content: bytes


class _PageFailed(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass
class Crawl:
    """One run over one configuration. `session` is a guarded outbound session."""

    run: KbCrawlRun
    config: KbCrawlConfig
    session: outbound.GuardedSession
    hosts: set[str] = field(default_factory=set)
    robots: dict[str, object] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    last_fetch: dict[str, float] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    keep: set[str] = field(default_factory=set)  # pages whose rules stay (reached, failed or capped)
    # False once a robots.txt or a start URL could not be reached: an outage must not read as
    # "every page gone", so such a run retires only the pages answered 404/410.
    complete: bool = True
    robots_text: dict[str, str] = field(default_factory=dict)  # what `robots` was parsed from
    pending_hosts: list[str] = field(default_factory=list)  # robots.txt and sitemaps still to read
    queue: deque[tuple[str, int]] = field(default_factory=deque)  # (url, depth) still to fetch
    fetches: int = 0

    def __post_init__(self) -> None:
        self.widget = self.run.widget
        starts = [u for u in (normalise(url) for url in self.config.start_urls) if u]
        self.starts = list(dict.fromkeys(starts))
        self.hosts = {host_key(url) for url in self.starts}

    # --- slices ---------------------------------------------------------------------------------

    def begin(self) -> None:
        """The first slice's work list: every host's robots.txt and sitemaps, then the start URLs."""
        for url in self.starts:
            self.seen.add(url)
            self.queue.append((url, 0))
        self.pending_hosts = sorted(self.hosts)

    def snapshot(self) -> dict:
        """What is left to do, as JSON for the run's `frontier` (restored by `restore`)."""
        return {
            "pending_hosts": self.pending_hosts,
            "queue": [[url, depth] for url, depth in self.queue],
            "seen": sorted(self.seen),
            "keep": sorted(self.keep),
            "robots": self.robots_text,
            "delays": self.delays,
            "last_fetch": self.last_fetch,
            "complete": self.complete,
            "fetches": self.fetches,
        }

    def restore(self, saved: dict) -> None:
        from protego import Protego

        self.pending_hosts = list(saved["pending_hosts"])
        self.queue = deque((url, depth) for url, depth in saved["queue"])
        self.seen, self.keep = set(saved["seen"]), set(saved["keep"])
        self.robots_text = dict(saved["robots"])
        self.robots = {host: Protego.parse(text) for host, text in self.robots_text.items()}
        self.delays, self.last_fetch = dict(saved["delays"]), dict(saved["last_fetch"])
        self.complete, self.fetches = saved["complete"], saved["fetches"]

    def work_slice(self, seconds: float) -> bool:
        """Steps until the work list is empty (True: the crawl is done) or `seconds` have passed
        (False: the rest is for the next slice). At least one step."""
        started = time.monotonic()
        stepped = False
        while self.pending_hosts or self.queue:
            if stepped and time.monotonic() - started >= seconds:
                return False
            stepped = self._step()
        return True

    def _step(self) -> bool:
        """One host's robots.txt and sitemaps, or one page of the queue; False when the step sent
        nothing (a page over the cap or disallowed)."""
        if self.pending_hosts:
            if services.crawl_should_stop(run=self.run):
                raise _Stop()
            host = self.pending_hosts.pop(0)
            named = self._load_robots(host)
            if self.config.max_depth >= 1:
                for url in self._sitemap_pages(host, named):
                    if url not in self.seen and self._wanted(url):
                        self.seen.add(url)
                        self.queue.append((url, 1))
            return True
        url, depth = self.queue.popleft()
        if self.fetches >= self.config.max_pages:
            self.keep.add(url)  # found but over the cap: its rules stay
            return False
        if services.crawl_should_stop(run=self.run):
            raise _Stop()
        if not self._may_fetch(url):
            self.run.pages_disallowed += 1
            return False
        self.fetches += 1
        for link in self._page(url, depth):
            if link not in self.seen:
                self.seen.add(link)
                self.queue.append((link, depth + 1))
        return True

    # --- fetching -------------------------------------------------------------------------------

    def _polite(self, host: str) -> None:
        # wall-clock times: the last fetch of a host may have been made by the previous slice's process
        delay = self.delays.get(host, 0.0)
        last = self.last_fetch.get(host)
        if delay and last is not None:
            wait = last + delay - time.time()
            if wait > 0:
                sleep(min(wait, delay))
        self.last_fetch[host] = time.time()

    def _get(self, url: str, *, max_bytes: int, accept: str, deadline: float) -> outbound.GuardedResponse:
        self._polite(host_key(url))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise outbound.OutboundError("timeout")
        return self.session.request(
            "GET",
            url,
            headers={"User-Agent": USER_AGENT, "Accept": accept},
            max_bytes=max_bytes,
            deadline=remaining,
        )

    def _follow(self, url: str, *, max_bytes: int, accept: str) -> _Fetched:
        """GET with redirects followed here: each hop checked by the guard's policy first (a private
        address refused: `address_not_allowed`), then kept on the crawl's hosts and robots rules.
        Every hop shares one PAGE_DEADLINE."""
        current = url
        deadline = time.monotonic() + PAGE_DEADLINE
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = self._get(current, max_bytes=max_bytes, accept=accept, deadline=deadline)
            except outbound.OutboundBlocked as exc:
                raise _PageFailed(exc.reason) from None
            except outbound.OutboundError as exc:
                raise _PageFailed(exc.reason) from None
            if not response.is_redirect:
                content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
                return _Fetched(current, response.status_code, content_type, response.content)
            target = resolve(current, response.headers["Location"])
            if target is None:
                raise _PageFailed("invalid_url")  # the guard's own word for a URL it cannot read
            try:
                parts = outbound.check_url(target)
                outbound.pin_address(parts.hostname or "", parts.port or 443)
            except outbound.OutboundBlocked as exc:
                raise _PageFailed(exc.reason) from None
            except outbound.OutboundError as exc:
                raise _PageFailed(exc.reason) from None
            nxt = normalise(target)
            if nxt is None or host_key(nxt) not in self.hosts:
                raise _PageFailed("redirect_off_site")
            if not self._may_fetch(nxt):
                raise _PageFailed("redirect_disallowed")
            current = nxt
        raise _PageFailed("too_many_redirects")

    # --- robots.txt and sitemaps ----------------------------------------------------------------

    def _load_robots(self, host: str) -> list[str]:
        """Parse the host's robots.txt; the sitemap URLs it names."""

        url = f"https://{host}/robots.txt"
        try:
            fetched = self._follow(url, max_bytes=ROBOTS_MAX_BYTES, accept="text/plain")
        except _PageFailed as exc:
            logger.info("kb crawl: robots.txt of %s unreachable (%s): host disallowed", host, exc.error)
            self._set_robots(host, DISALLOW_ALL)
            self.complete = False
            return []
        if 400 <= fetched.status < 500:
            self._set_robots(host, "")
            return []
        if fetched.status != 200:
            self._set_robots(host, DISALLOW_ALL)
            self.complete = False
            return []
        rules = self._set_robots(host, fetched.content.decode("utf-8", errors="replace"))
        delay = rules.crawl_delay(ROBOTS_AGENT)
        if delay:
            self.delays[host] = min(float(delay), MAX_CRAWL_DELAY)
        return list(rules.sitemaps)

    def _set_robots(self, host: str, text: str):
        from protego import Protego

        self.robots_text[host] = text
        self.robots[host] = rules = Protego.parse(text)
        return rules

    def _may_fetch(self, url: str) -> bool:
        rules = self.robots.get(host_key(url))
        return rules is None or rules.can_fetch(url, ROBOTS_AGENT)

    def _sitemap_pages(self, host: str, named: list[str]) -> list[str]:
        """Page URLs from the host's sitemaps (index sitemaps followed, at most
        MAX_SITEMAPS_PER_HOST documents), each fetched through the guard."""
        from usp.objects.sitemap import AbstractIndexSitemap, InvalidSitemap
        from usp.tree import sitemap_from_str

        pending = deque(u for u in (normalise(s) for s in named) if u and host_key(u) == host)
        if not pending:
            pending.append(f"https://{host}/sitemap.xml")
        done: set[str] = set()
        pages: list[str] = []
        while pending and len(done) < MAX_SITEMAPS_PER_HOST:
            url = pending.popleft()
            if url in done:
                continue
            done.add(url)
            try:
                fetched = self._follow(url, max_bytes=SITEMAP_MAX_BYTES, accept="application/xml,text/xml,text/plain")
            except _PageFailed:
                continue
            if fetched.status != 200 or not fetched.content:
                continue
            try:
                tree = sitemap_from_str(_sitemap_text(fetched.content))
            except Exception:  # a hostile or broken sitemap is skipped, never a failed run
                logger.info("kb crawl: sitemap %s could not be parsed", url)
                continue
            if isinstance(tree, InvalidSitemap):
                continue
            if isinstance(tree, AbstractIndexSitemap):
                for sub in tree.sub_sitemaps:
                    nxt = normalise(sub.url)
                    if nxt and host_key(nxt) == host:
                        pending.append(nxt)
                continue
            for page in tree.all_pages():
                nxt = normalise(page.url)
                if nxt and host_key(nxt) == host:
                    pages.append(nxt)
        return pages

    # --- the run --------------------------------------------------------------------------------

    def _record_failure(self, url: str, error: str) -> None:
        self.run.pages_failed += 1
        if len(self.run.failures) < services.MAX_FAILURES_KEPT:
            self.run.failures = [*self.run.failures, {"url": url, "error": error}]

    def _wanted(self, url: str) -> bool:
        return allowed_by_globs(url, self.config.include, self.config.exclude)

    def crawl(self) -> None:
        """The whole run in one go (tests and tools; the worker runs it in slices)."""
        self.begin()
        self.work_slice(float("inf"))

    def _page(self, url: str, depth: int) -> list[str]:
        """Fetch and index one page; the in-scope links to follow."""
        try:
            fetched = self._follow(url, max_bytes=PAGE_MAX_BYTES, accept="text/html,application/xhtml+xml")
        except _PageFailed as exc:
            self.keep.add(url)
            self._record_failure(url, exc.error)
            if url in self.starts:
                self.complete = False
            return []
        final = fetched.url
        if fetched.status in (404, 410):
            if services.retire_crawled_page(widget=self.widget, url=url):
                self.run.pages_retired += 1
            return []
        if fetched.status != 200:
            self.keep.add(url)
            self._record_failure(url, f"http_{fetched.status}")
            if url in self.starts:
                self.complete = False
            return []
        if fetched.content_type not in HTML_TYPES:
            return []  # not a page (a PDF, an image): neither indexed nor kept
        self.run.pages_fetched += 1
        self.seen.add(final)
        links = self._links(fetched) if depth < self.config.max_depth else []
        if self._wanted(final):
            self._index(final, fetched)
        return links

    def _index(self, url: str, fetched: _Fetched) -> None:
        try:
            text = extract.text_of(fetched.content, "html")
        except extract.NotReadable:
            text = ""
        if not text.strip():
            self.keep.add(url)
            self._record_failure(url, "no_text")
            return
        self.keep.add(url)
        fingerprint = hashlib.sha256(text.encode()).hexdigest()
        page = services.crawled_page(widget=self.widget, url=url)
        if page is not None and page.fingerprint == fingerprint:
            services.touch_crawled_page(page=page, run=self.run)
            self.run.pages_unchanged += 1
            return
        pieces = kbtext.chunk(text)[: services.MAX_CHUNKS_PER_DOCUMENT]
        try:
            vectors, model = services.embed_chunks(widget=self.widget, texts=pieces)
        except EmbedProviderFailed:
            self._record_failure(url, "embed_provider_failed")
            return
        services.index_crawled_page(
            widget=self.widget,
            run=self.run,
            url=url,
            fingerprint=fingerprint,
            texts=pieces,
            vectors=vectors,
            model=model,
        )
        self.run.pages_indexed += 1

    def _links(self, fetched: _Fetched) -> list[str]:
        import lxml.etree
        import lxml.html

        try:
            document = lxml.html.document_fromstring(fetched.content)
        except (lxml.etree.LxmlError, ValueError):
            return []
        found: list[str] = []
        for element in document.iter("a"):
            href = element.get("href")
            if not href:
                continue
            joined = resolve(fetched.url, href)
            url = normalise(joined) if joined is not None else None
            if url and host_key(url) in self.hosts and self._wanted(url) and url not in found:
                found.append(url)
        return found

    def retire_unreached(self) -> None:
        """After a finished run: the rules of pages indexed before that this crawl did not reach
        (nothing when a robots.txt or a start URL was unreachable)."""
        if not self.complete:
            return
        for url in services.crawled_urls(widget=self.widget):
            if url not in self.keep and services.retire_crawled_page(widget=self.widget, url=url):
                self.run.pages_retired += 1


def run_crawl(*, run_id: int, slice_number: int = 0) -> None:
    """Run one slice of a crawl (see the module docstring): slice 0 starts a queued run, a later one
    resumes a running run from its frontier. A run no longer queued (running) or a slice already done
    is left alone."""
    if slice_number == 0:
        started = services.start_crawl_run(run_id=run_id)
    else:
        started = services.resume_crawl_run(run_id=run_id, slice_number=slice_number)
    if started is None:
        return
    run, config = started
    with outbound.get_session() as session:
        crawl = Crawl(run=run, config=config, session=session)
        try:
            if slice_number == 0:
                crawl.begin()
            else:
                crawl.restore(run.frontier)
            if not crawl.work_slice(SLICE_SECONDS):
                services.pause_crawl_run(run=run, frontier=crawl.snapshot())
                return
            crawl.retire_unreached()
        except _Stop:
            services.finish_crawl_run(run=run, status=KbCrawlRun.Status.CANCELLED, error="replaced")
            return
        except Exception:
            logger.exception("kb crawl %s failed", run_id)
            services.finish_crawl_run(run=run, status=KbCrawlRun.Status.FAILED, error="internal_error")
            return
    services.finish_crawl_run(run=run, status=KbCrawlRun.Status.FINISHED)

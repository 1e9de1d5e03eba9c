"""The crawler against a loopback HTTPS site (trustme certificate, `site.test` resolved to
127.0.0.1): robots.txt, sitemaps, the guard on every redirect hop, fingerprints, retirement,
caps, globs, cancellation, slices, the schedule and the knowledge-base events."""

import ipaddress
from collections import deque
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core import events
from apps.kb import crawler, services, tasks
from apps.kb.models import KbChunk, KbCrawlConfig, KbCrawlPage, KbCrawlRun
from apps.kb.services import crawls
from apps.kb.testing import OfflineHooks
from apps.kb.tests.site import HOST, serve
from apps.platform import outbound
from tests.support.factories import WidgetFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(tmp_path, settings, monkeypatch):
    def resolve(host, port):
        if host == HOST:
            return [ipaddress.ip_address("127.0.0.1")]
        if host == "private.test":
            return [ipaddress.ip_address("10.0.0.5")]
        raise outbound.OutboundError("resolve_failed")

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    for served in serve(tmp_path):
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(served.ca_path))
        yield served


def links(*paths):
    return " ".join(f'<a href="{p}">link {i}</a>' for i, p in enumerate(paths))


def paragraph(text):
    return f"<article><h1>Title</h1><p>{text}</p></article>"


def configure(widget, site, **overrides):
    config = {
        "start_urls": [site.url("/")],
        "include": [],
        "exclude": [],
        "max_pages": 100,
        "max_depth": 3,
        "schedule": "manual",
        **overrides,
    }
    _, run = services.replace_crawler(widget=widget, config=config)
    return run


def crawl(widget, site, **overrides) -> KbCrawlRun:
    run = configure(widget, site, **overrides)
    crawler.run_crawl(run_id=run.pk)
    run.refresh_from_db()
    return run


def chunks_of(widget, site, path):
    return list(KbChunk.objects.filter(widget=widget, source_ref=f"crawl:{site.url(path)}").order_by("chunk_index"))


ABOUT = "Delivery across the city takes two days and costs nothing for orders above five thousand roubles."
FAQ = "Returns are accepted within fourteen days when the packaging is intact and the receipt is kept."
SITEMAP_ONLY = "Our warehouse in Kazan works around the clock and ships parcels every evening."


def build(site):
    site.text(
        "/robots.txt",
        f"User-agent: *\nDisallow: /private/\n\nSitemap: {site.url('/sitemap.xml')}\n",
    )
    site.text(
        "/sitemap.xml",
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/from-sitemap')}</loc></url>"
        "</urlset>",
        "application/xml",
    )
    site.html(
        "/",
        paragraph("Welcome to the shop. " * 5)
        + links("/about", "/faq", "/private/secret", "/out", "https://elsewhere.test/x", "#top"),
    )
    site.html("/about", paragraph(ABOUT))
    site.html("/faq", paragraph(FAQ))
    site.html("/private/secret", paragraph("The admin password is hunter2."))
    site.html("/from-sitemap", paragraph(SITEMAP_ONLY))
    site.redirect("/out", "https://10.0.0.7/internal")


def test_a_crawl_honours_robots_reads_the_sitemap_and_indexes_the_pages(widget, site, offline):
    build(site)
    run = crawl(widget, site)
    assert run.status == "finished", (run.error, run.failures)
    assert "/private/secret" not in site.requested  # disallowed by robots.txt: never fetched
    assert run.pages_disallowed == 1
    assert "/sitemap.xml" in site.requested and "/robots.txt" in site.requested
    assert site.user_agents == {crawler.USER_AGENT}
    assert ABOUT in " ".join(c.content for c in chunks_of(widget, site, "/about"))
    assert SITEMAP_ONLY in " ".join(c.content for c in chunks_of(widget, site, "/from-sitemap"))
    assert all(c.regenerates for c in KbChunk.objects.filter(widget=widget))
    assert not KbChunk.objects.filter(content__contains="hunter2").exists()
    # the redirect to a private address was refused by the guard and recorded as a failed page
    assert {"url": site.url("/out"), "error": "address_not_allowed"} in run.failures
    assert run.pages_failed == 1
    assert run.pages_indexed == 4 and run.pages_fetched == 4  # /, /about, /faq, /from-sitemap
    assert run.started_at and run.finished_at and run.finished_at >= run.started_at


def test_a_page_that_changes_is_embedded_again_one_that_does_not_is_skipped(widget, site, offline):
    build(site)
    assert crawl(widget, site).status == "finished"
    faq_before = [c.pk for c in chunks_of(widget, site, "/faq")]
    about_before = [c.pk for c in chunks_of(widget, site, "/about")]
    calls_before = offline.calls
    site.html("/about", paragraph("Delivery now takes one day everywhere in the region."))
    second = crawl(widget, site)
    assert second.status == "finished"
    assert second.pages_indexed == 1 and second.pages_unchanged == 3
    assert offline.calls == calls_before + 1  # one embedding batch: the changed page only
    assert [c.pk for c in chunks_of(widget, site, "/faq")] == faq_before
    about = chunks_of(widget, site, "/about")
    assert [c.pk for c in about] != about_before
    assert "one day everywhere" in about[0].content and ABOUT not in about[0].content


def test_a_removed_page_and_a_page_no_longer_linked_are_retired(widget, site, offline):
    build(site)
    crawl(widget, site)
    assert chunks_of(widget, site, "/faq") and chunks_of(widget, site, "/about")
    site.remove("/faq", 410)
    site.html("/", paragraph("Welcome to the shop. " * 5) + links("/faq"))  # /about no longer linked
    run = crawl(widget, site)
    assert run.status == "finished"
    assert not chunks_of(widget, site, "/faq") and not chunks_of(widget, site, "/about")
    assert run.pages_retired == 2
    assert not KbCrawlPage.objects.filter(url__in=[site.url("/faq"), site.url("/about")]).exists()
    assert chunks_of(widget, site, "/from-sitemap")  # still in the sitemap


def test_an_embedding_failure_fails_the_page_not_the_run(widget, site):
    from apps.kb import hooks

    build(site)
    with hooks.use_hooks(OfflineHooks(fail="server_error")):
        run = crawl(widget, site)
    assert run.status == "finished"
    assert {"url": site.url("/about"), "error": "embed_provider_failed"} in run.failures
    assert not KbChunk.objects.filter(widget=widget).exists()
    assert not KbCrawlPage.objects.filter(widget=widget).exists()  # retried by the next crawl


def test_page_and_depth_caps_and_globs(widget, site, offline):
    site.text("/robots.txt", "User-agent: *\nAllow: /\n")
    site.html("/", paragraph("Start page of the documentation. " * 3) + links("/docs/a", "/blog/x", "/docs/b"))
    site.html("/docs/a", paragraph("Document A explains the installation.") + links("/docs/deep"))
    site.html("/docs/b", paragraph("Document B explains the configuration."))
    site.html("/docs/deep", paragraph("Deep document about troubleshooting."))
    site.html("/blog/x", paragraph("A blog post about our company picnic."))
    run = crawl(widget, site, include=["/docs/*"], exclude=["/docs/b"], max_depth=1)
    assert run.status == "finished"
    indexed = set(KbCrawlPage.objects.filter(widget=widget).values_list("url", flat=True))
    assert indexed == {site.url("/docs/a")}  # / is fetched for its links but not included
    assert "/blog/x" not in site.requested and "/docs/b" not in site.requested
    assert "/docs/deep" not in site.requested  # depth 2
    capped = crawl(widget, site, max_pages=1)
    assert capped.pages_fetched == 1
    assert site.url("/docs/a") in set(KbCrawlPage.objects.values_list("url", flat=True))  # found, kept


def test_crawl_delay_is_honoured_within_reason(widget, site, offline, monkeypatch):
    waits = []
    monkeypatch.setattr(crawler, "sleep", waits.append)
    site.text("/robots.txt", "User-agent: *\nCrawl-delay: 60\n")
    site.html("/", paragraph("Front page text here. " * 3) + links("/a"))
    site.html("/a", paragraph("Second page text here."))
    assert crawl(widget, site).status == "finished"
    assert waits and all(0 < w <= crawler.MAX_CRAWL_DELAY for w in waits)


def test_a_robots_group_for_our_agent_wins_over_the_star_group(widget, site, offline):
    site.text("/robots.txt", "User-agent: ChatWidgetKbCrawler\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
    site.html("/", paragraph("Front page."))
    run = crawl(widget, site)
    assert run.pages_disallowed == 1 and site.requested.count("/") == 0


def test_a_redirect_within_the_site_is_followed_and_an_off_site_one_refused(widget, site, offline):
    site.html("/", paragraph("Front page text. " * 3) + links("/old", "/away"))
    site.redirect("/old", "/new")
    site.html("/new", paragraph("The new page about warranty repairs."))
    site.redirect("/away", "https://private.test/x")
    run = crawl(widget, site)
    assert chunks_of(widget, site, "/new")
    assert {"url": site.url("/away"), "error": "address_not_allowed"} in run.failures


def test_an_unreadable_link_or_redirect_fails_one_page_not_the_run(widget, site, offline):
    site.html("/", paragraph("Front page text. " * 3) + links("https://[::1", "//[", "/bad", "/new"))
    site.pages["/bad"] = (302, {"Location": "https://[::1"}, b"")
    site.html("/new", paragraph("The new page about warranty repairs."))
    run = crawl(widget, site)
    assert run.status == KbCrawlRun.Status.FINISHED
    assert chunks_of(widget, site, "/new")
    assert run.failures == [{"url": site.url("/bad"), "error": "invalid_url"}]


def test_a_queued_crawl_replaced_never_starts(widget, site, offline):
    build(site)
    first = configure(widget, site)
    second = configure(widget, site, max_pages=5)
    first.refresh_from_db()
    assert first.status == "cancelled" and first.error == "replaced"
    crawler.run_crawl(run_id=first.pk)
    assert site.requested == []
    crawler.run_crawl(run_id=second.pk)
    second.refresh_from_db()
    assert second.status == "finished"


def test_a_running_crawl_whose_config_is_replaced_stops_between_pages(widget, site, offline, monkeypatch):
    build(site)
    run = configure(widget, site)
    real = crawler.Crawl._page

    def page_then_replace(self, url, depth):
        found = real(self, url, depth)
        KbCrawlConfig.objects.filter(widget=widget).update(generation=self.config.generation + 1)
        return found

    monkeypatch.setattr(crawler.Crawl, "_page", page_then_replace)
    crawler.run_crawl(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "cancelled" and run.pages_fetched == 1
    assert [p for p in site.requested if p not in ("/robots.txt", "/sitemap.xml")] == ["/"]


@pytest.fixture
def bulk_queue(monkeypatch, django_capture_on_commit_callbacks):
    """The crawl tasks sent, in order (a FIFO queue like the broker's); `run_next()` runs the oldest
    as the `bulk` worker would, sending what it sends to the back."""
    sent: deque[tuple] = deque()
    monkeypatch.setattr(crawls, "_dispatch_crawl", lambda *args: sent.append(args))

    class Queue:
        def put(self, widget, site, **overrides):
            with django_capture_on_commit_callbacks(execute=True):
                return configure(widget, site, **overrides)

        def run_next(self) -> None:
            args = sent.popleft()
            with django_capture_on_commit_callbacks(execute=True):
                tasks.run_crawl(*args)

        def __len__(self):
            return len(sent)

    return Queue()


def slow_site(site, pages: int, delay: float) -> None:
    site.delay, site.delay_prefix = delay, "/slow"
    site.text("/robots.txt", "User-agent: *\nAllow: /\n")
    site.html("/slow/", paragraph("The slow front page. " * 3) + links(*(f"/slow/{n}" for n in range(pages))))
    for n in range(pages):
        site.html(f"/slow/{n}", paragraph(f"Slow page number {n} says something about parcels."))


def test_a_slice_of_a_slow_site_holds_the_worker_for_one_page_and_the_slices_finish_the_crawl(
    widget, site, offline, bulk_queue, monkeypatch
):
    # given a site answering each page in 0.5 s, and slices shorter than a page
    monkeypatch.setattr(crawler, "SLICE_SECONDS", 0.0)
    slow_site(site, pages=4, delay=0.5)
    run = bulk_queue.put(widget, site, start_urls=[site.url("/slow/")])

    # when the worker runs the crawl's first tasks
    bulk_queue.run_next()  # robots.txt and the sitemap
    bulk_queue.run_next()

    # then each fetched one step's worth and sent the next slice instead of crawling on
    run.refresh_from_db()
    assert run.status == "running" and run.pages_fetched == 1 and run.slices == 2
    assert [p for p in site.requested if p.startswith("/slow")] == ["/slow/"]
    assert len(bulk_queue) == 1
    # and the slices that follow finish it, a page each, as one run would
    while bulk_queue:
        bulk_queue.run_next()
    run.refresh_from_db()
    assert run.status == "finished" and run.pages_fetched == 5 and run.pages_indexed == 5 and run.slices == 5
    assert sorted(p for p in site.requested if p.startswith("/slow")) == sorted(
        ["/slow/", *(f"/slow/{n}" for n in range(4))]
    )
    assert run.frontier == {}


def test_two_slow_crawls_leave_room_for_a_third_widgets_crawl(
    widget, other_widget, site, offline, bulk_queue, monkeypatch
):
    # given two widgets crawling a slow site (0.3 s a page) and a third one a quick page, queued last
    monkeypatch.setattr(crawler, "SLICE_SECONDS", 0.0)
    slow_site(site, pages=6, delay=0.3)
    site.html("/quick", paragraph("A quick page about opening hours and holidays."))
    third = WidgetFactory()
    first = bulk_queue.put(widget, site, start_urls=[site.url("/slow/")])
    second = bulk_queue.put(other_widget, site, start_urls=[site.url("/slow/")])
    quick = bulk_queue.put(third, site, start_urls=[site.url("/quick")])

    # when one worker slot takes the queue's tasks in order
    tasks_run = 0
    while quick.status != "finished":
        bulk_queue.run_next()
        tasks_run += 1
        quick.refresh_from_db()

    # then the third crawl ended after two slices of each slow one, which still run
    assert tasks_run <= 6
    for slow in (first, second):
        slow.refresh_from_db()
        assert slow.status == "running" and slow.pages_fetched <= 1


def test_the_schedule_queues_due_crawls_only(widget, other_widget, site, offline):
    configure(widget, site, schedule="daily")
    KbCrawlRun.objects.filter(widget=widget).update(status="finished")
    assert services.queue_scheduled_crawls() == 0  # crawled less than a day ago
    KbCrawlRun.objects.filter(widget=widget).update(created_at=timezone.now() - timedelta(days=2))
    configure(other_widget, site, schedule="manual")
    KbCrawlRun.objects.filter(widget=other_widget).update(created_at=timezone.now() - timedelta(days=30))
    assert services.queue_scheduled_crawls() == 1
    assert KbCrawlRun.objects.filter(widget=widget, status="queued", trigger="schedule").count() == 1
    assert services.queue_scheduled_crawls() == 0  # one is queued already


def test_the_beat_schedule_runs_the_crawl_job():
    from config.celery import BEAT_SCHEDULE

    assert BEAT_SCHEDULE["kb.queue_scheduled_crawls"][0] == "apps.kb.tasks.queue_scheduled_crawls"


def test_a_crawl_emits_internal_kb_events(widget, site, offline):
    seen = []
    kb_types = [name for name in events.INTERNAL if name.startswith("kb.")]
    events.subscribe(kb_types, seen.append, phase=events.IN_TRANSACTION)
    try:
        build(site)
        run = crawl(widget, site)
    finally:
        for name in kb_types:
            events._handlers[(name, events.IN_TRANSACTION)].remove(seen.append)
    types = [e.type for e in seen]
    assert types[0] == events.KB_CRAWLER_CHANGED
    assert types.count(events.KB_CRAWL_PAGE_CHANGED) == run.pages_indexed
    assert seen[-1].type == events.KB_CRAWL_FINISHED and seen[-1].data["status"] == "finished"
    assert not set(kb_types) & set(events.CATALOGUE)  # never a webhook


def test_an_index_sitemap_and_a_gzipped_one_are_read_through_the_guard(widget, site, offline):
    import gzip

    site.text("/robots.txt", f"User-agent: *\nAllow: /\nSitemap: {site.url('/index.xml')}\n")
    site.text(
        "/index.xml",
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/pages.xml.gz')}</loc></sitemap>"
        "<sitemap><loc>https://elsewhere.test/s.xml</loc></sitemap>"
        "</sitemapindex>",
        "application/xml",
    )
    urlset = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url('/deep/page')}</loc></url><url><loc>https://elsewhere.test/p</loc></url></urlset>"
    )
    site.pages["/pages.xml.gz"] = (200, {"Content-Type": "application/gzip"}, gzip.compress(urlset.encode()))
    site.html("/", paragraph("Front page with no links at all."))
    site.html("/deep/page", paragraph("A page only the gzipped sitemap knows about the gift cards."))
    run = crawl(widget, site)
    assert run.status == "finished"
    assert chunks_of(widget, site, "/deep/page")
    assert not KbCrawlPage.objects.filter(url__contains="elsewhere").exists()


def test_robots_unreachable_disallows_the_host_and_non_html_is_not_indexed(widget, site, offline):
    site.pages["/robots.txt"] = (503, {"Content-Type": "text/plain"}, b"busy")
    site.html("/", paragraph("Front page."))
    run = crawl(widget, site)
    assert run.status == "finished" and run.pages_disallowed == 1 and "/" not in site.requested
    site.text("/robots.txt", "User-agent: *\nAllow: /\n")
    site.html("/", paragraph("Front page text, long enough to keep. " * 3) + links("/file.pdf"))
    site.pages["/file.pdf"] = (200, {"Content-Type": "application/pdf"}, b"%PDF-1.4 not a page")
    run = crawl(widget, site)
    assert "/file.pdf" in site.requested
    assert set(KbCrawlPage.objects.values_list("url", flat=True)) == {site.url("/")}


def test_a_site_outage_retires_nothing(widget, site, offline):
    build(site)
    crawl(widget, site)
    indexed = set(KbCrawlPage.objects.values_list("url", flat=True))
    site.pages["/"] = (503, {"Content-Type": "text/plain"}, b"down")
    run = crawl(widget, site)
    assert run.status == "finished" and {"url": site.url("/"), "error": "http_503"} in run.failures
    assert set(KbCrawlPage.objects.values_list("url", flat=True)) == indexed and run.pages_retired == 0
    site.pages["/robots.txt"] = (500, {"Content-Type": "text/plain"}, b"down")
    run = crawl(widget, site)
    assert set(KbCrawlPage.objects.values_list("url", flat=True)) == indexed and run.pages_retired == 0


def test_the_schedule_job_ends_a_crawl_whose_worker_is_gone(widget, site, offline):
    run = configure(widget, site, schedule="daily")
    services.start_crawl_run(run_id=run.pk)
    KbCrawlRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(hours=2), created_at=timezone.now() - timedelta(days=2)
    )
    assert services.queue_scheduled_crawls() == 1
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "worker_lost"
    assert KbCrawlRun.objects.filter(widget=widget, status="queued").count() == 1

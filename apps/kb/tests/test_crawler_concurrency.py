"""Races with real threads on PostgreSQL: a configuration write against a worker claiming the
queued crawl, and two writes at once."""

import pytest

from apps.kb import services
from apps.kb.errors import CrawlRunning
from apps.kb.models import KbCrawlConfig, KbCrawlRun
from apps.kb.services import crawls
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONFIG = {
    "start_urls": ["https://docs.example.com/"],
    "include": [],
    "exclude": [],
    "max_pages": 10,
    "max_depth": 1,
    "schedule": "manual",
}


@pytest.fixture(autouse=True)
def no_dispatch(monkeypatch):
    dispatched = []
    monkeypatch.setattr(crawls, "_dispatch_crawl", dispatched.append)
    return dispatched


@pytest.mark.parametrize("attempt", range(5))
def test_a_write_and_a_worker_claim_never_both_win(widget, attempt):
    _, run = services.replace_crawler(widget=widget, config=CONFIG)

    def write():
        try:
            services.replace_crawler(widget=widget, config={**CONFIG, "max_pages": 20})
            return "replaced"
        except CrawlRunning:
            return "409"

    def claim():
        return "started" if services.start_crawl_run(run_id=run.pk) else "refused"

    outcome = race([write, claim])
    run.refresh_from_db()
    if outcome == ["409", "started"]:
        assert run.status == "running" and KbCrawlConfig.objects.get(widget=widget).max_pages == 10
    else:
        assert outcome == ["replaced", "refused"], outcome
        assert run.status == "cancelled"
        assert KbCrawlRun.objects.filter(widget=widget, status="queued").count() == 1


def test_two_writes_at_once_leave_one_queued_crawl(widget):
    results = race([lambda: services.replace_crawler(widget=widget, config=CONFIG) for _ in range(4)])
    assert not [r for r in results if isinstance(r, Exception)], results
    assert KbCrawlRun.objects.filter(widget=widget, status="queued").count() == 1
    assert KbCrawlRun.objects.filter(widget=widget, status="cancelled").count() == 3
    assert KbCrawlConfig.objects.get(widget=widget).generation == 4

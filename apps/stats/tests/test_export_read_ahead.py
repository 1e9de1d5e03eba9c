"""The export reads each page after the first on a thread of its own while the last one is sent."""

import threading

import pytest

from apps.stats import export

from .api.test_export import EXPORT, JAN15, jsonl
from .conftest import msk


class RecordedThreads:
    def __init__(self, monkeypatch):
        self.started: list[threading.Thread] = []
        recorded = self.started

        class Thread(threading.Thread):
            def start(self):
                if self.name == "export-read-ahead":
                    recorded.append(self)
                super().start()

        monkeypatch.setattr(export.threading, "Thread", Thread)

    def wait(self):
        for thread in self.started:
            thread.join(timeout=10)
            assert not thread.is_alive()


@pytest.fixture
def threads(monkeypatch):
    return RecordedThreads(monkeypatch)


def pages_of(*sizes, error: Exception | None = None):
    start = 0
    for size in sizes:
        yield [(start + i,) for i in range(size)]
        start += size
    if error is not None:
        raise error


def test_pages_come_in_order_and_the_thread_ends(threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    got = list(export.read_ahead(pages_of(2, 2, 2, 1)))
    assert [row[0] for page in got for row in page] == list(range(7))
    threads.wait()
    assert len(threads.started) == 1


def test_a_window_of_one_page_starts_no_thread(threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    assert list(export.read_ahead(pages_of(1))) == [[(0,)]]
    assert list(export.read_ahead(pages_of())) == []
    assert threads.started == []


def test_an_error_reading_a_page_is_raised_to_the_reader(threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    pages = export.read_ahead(pages_of(2, 2, error=RuntimeError("the database went away")))
    assert next(pages) == [(0,), (1,)]
    assert next(pages) == [(2,), (3,)]
    with pytest.raises(RuntimeError, match="went away"):
        next(pages)
    threads.wait()


def test_closing_the_export_stops_the_thread(threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    pages = export.read_ahead(pages_of(*[2] * 1000))
    next(pages)
    next(pages)
    pages.close()
    threads.wait()


@pytest.mark.django_db(transaction=True)
def test_an_export_outside_a_transaction_reads_ahead_on_its_own_connection(api, widget, talk, threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    made = [talk.at(msk(2025, 1, 15, 10, minute)).visitor() for minute in range(5)]
    rows = jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))
    assert [row["id"] for row in rows] == [chat.pk for chat in made]
    threads.wait()
    assert len(threads.started) == 1


@pytest.mark.django_db
def test_inside_a_transaction_every_page_is_read_on_its_connection(api, widget, talk, threads, monkeypatch):
    monkeypatch.setattr(export, "PAGE_SIZE", 2)
    made = [talk.at(msk(2025, 1, 15, 10, minute)).visitor() for minute in range(5)]
    assert [row["id"] for row in jsonl(api().get(EXPORT, {**JAN15, "format": "jsonl"}))] == [chat.pk for chat in made]
    assert threads.started == []

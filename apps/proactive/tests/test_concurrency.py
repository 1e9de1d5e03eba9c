"""Proactive messages under concurrency, with real threads on PostgreSQL: two writers of one name end
as one row and one 409; the day's first events racing each other make one row and lose no count."""

import pytest

from apps.proactive import services
from apps.proactive.errors import NameTaken
from apps.proactive.models import ProactiveCount, ProactiveMessage
from tests.support.concurrency import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_two_creates_of_one_name_make_one_message_and_one_name_taken(widget):
    def create():
        try:
            return services.create_message(widget=widget, data={"name": "Offer", "text_i18n": {"en": "Hi"}}).pk
        except NameTaken as err:
            return err

    results = race([create, create, create])
    assert sum(isinstance(r, int) for r in results) == 1
    assert sum(isinstance(r, NameTaken) for r in results) == 2
    assert ProactiveMessage.objects.filter(widget=widget, name="Offer").count() == 1


def test_concurrent_first_events_of_a_day_count_each_once(widget):
    row = services.create_message(widget=widget, data={"name": "Offer", "text_i18n": {"en": "Hi"}})
    results = race([lambda: services.count(widget=widget, message_id=row.pk, kind="shown") for _ in range(6)])
    assert all(r is None for r in results), results
    counts = ProactiveCount.objects.filter(message=row)
    assert counts.count() == 1 and counts.get().shown == 6

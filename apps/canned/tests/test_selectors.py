"""Reads of canned responses shared by the API and the console's picker."""

import pytest

from apps.canned import selectors
from apps.canned.models import CannedResponse
from apps.canned.tests.factories import CannedResponseFactory

pytestmark = pytest.mark.django_db


def test_a_search_with_a_nul_character_finds_nothing_on_every_database(widget):
    # the console's picker passes what is typed after `/` as it is; no stored row holds NUL, and
    # PostgreSQL refuses it in a query
    CannedResponseFactory(widget=widget, shortcut="hello", title="Greeting", text="Hello")
    found = selectors.list_canned_responses(CannedResponse.objects.filter(widget=widget), q="he\x00llo")
    assert list(found) == []

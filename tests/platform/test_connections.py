"""A thread about to wait long on something else gives its database connection back to the pool
(apps.platform.connections), and only where a pool takes it back."""

from __future__ import annotations

import pytest
from django.db import connections

from apps.platform.connections import lend_back_while_waiting

pytestmark = pytest.mark.django_db(transaction=True)


def _default():
    return connections["default"]


@pytest.fixture
def pooled(monkeypatch):
    connection = _default()
    connection.ensure_connection()  # opened as configured; the pool below is only what the code reads
    options = {**connection.settings_dict.get("OPTIONS", {}), "pool": {"max_size": 2}}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    closed = []
    monkeypatch.setattr(connection, "close", lambda: closed.append(True))
    return closed


def test_a_pooled_connection_is_given_back_before_the_wait(pooled):
    lend_back_while_waiting()
    assert pooled == [True]


def test_a_connection_inside_a_transaction_is_kept(pooled, monkeypatch):
    monkeypatch.setattr(_default(), "in_atomic_block", True)
    lend_back_while_waiting()
    assert pooled == []


def test_without_a_pool_the_connection_is_kept(monkeypatch):
    connection = _default()
    closed = []
    monkeypatch.setattr(connection, "close", lambda: closed.append(True))
    options = {k: v for k, v in connection.settings_dict.get("OPTIONS", {}).items() if k != "pool"}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    lend_back_while_waiting()
    assert closed == []

"""The request log line names the widget (and an API token's prefix) of the call: authentication notes
them through apps.core.logging.note_request, and the request log middleware writes them."""

import logging

import pytest

pytestmark = pytest.mark.django_db


def _request_lines(caplog, path):
    return [r for r in caplog.records if r.name == "apps.request" and getattr(r, "path", None) == path]


def test_an_api_call_logs_its_widget_and_token_prefix(api, widget, caplog):
    client = api()
    prefix = client._credentials["HTTP_AUTHORIZATION"].split()[1][:12]
    with caplog.at_level(logging.INFO, logger="apps.request"):
        assert client.get("/api/v1/chats").status_code == 200
    [line] = _request_lines(caplog, "/api/v1/chats")
    assert (line.widget_id, line.token) == (widget.pk, prefix)


def test_a_visitor_call_logs_its_widget(client, widget, caplog):
    path = f"/api/visitor/v1/{widget.button_guid}/config"
    with caplog.at_level(logging.INFO, logger="apps.request"):
        client.get(path)
    [line] = _request_lines(caplog, path)
    assert (line.widget_id, line.token) == (widget.pk, None)


def test_an_unauthenticated_call_names_no_widget(client, caplog):
    with caplog.at_level(logging.INFO, logger="apps.request"):
        assert client.get("/api/v1/chats").status_code == 401
    [line] = _request_lines(caplog, "/api/v1/chats")
    assert (line.widget_id, line.token) == (None, None)

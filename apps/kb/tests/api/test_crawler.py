"""GET/PUT/DELETE /v1/kb/crawler: the configuration, run states, 409 while a crawl runs, validation,
scopes and idempotency."""

import ipaddress
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.kb.models import KbCrawlConfig, KbCrawlRun
from apps.kb.tests.conftest import idem
from apps.platform import outbound

CRAWLER = "/api/v1/kb/crawler"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def dns(monkeypatch):
    """`docs.example.com` is public, `intranet.test` private, anything else does not resolve."""

    def resolve(host, port):
        if host in ("docs.example.com", "shop.example.com"):
            return [ipaddress.ip_address("93.184.216.34")]
        if host == "intranet.test":
            return [ipaddress.ip_address("10.1.2.3")]
        raise outbound.OutboundError("resolve_failed")

    monkeypatch.setattr(outbound.policy, "resolve_host", resolve)


def body(**overrides):
    return {"start_urls": ["https://docs.example.com/"], **overrides}


def put(client, data, **headers):
    return client.put(CRAWLER, data, format="json", **{**idem(), **headers})


def test_get_without_a_configuration(kb):
    response = kb.get(CRAWLER)
    assert response.status_code == 200
    assert response.json() == {"config": None, "current_run": None, "last_run": None}


def test_put_stores_the_whole_configuration_with_defaults_and_queues_a_crawl(kb, widget, captured_events):
    response = put(kb, body(include=["/docs/*"]))
    assert response.status_code == 200, response.content
    data = response.json()
    config = data["config"]
    assert config["start_urls"] == ["https://docs.example.com/"] and config["include"] == ["/docs/*"]
    assert (config["exclude"], config["max_pages"], config["max_depth"], config["schedule"]) == ([], 100, 3, "manual")
    assert data["current_run"]["status"] == "queued" and data["current_run"]["trigger"] == "put"
    assert data["last_run"] is None
    assert kb.get(CRAWLER).json() == data
    assert captured_events() == []  # internal events only: nothing for webhooks


def test_put_replaces_whole_and_cancels_the_queued_crawl(kb, widget):
    first = put(kb, body(include=["/a*"], max_pages=5, schedule="daily")).json()
    second = put(kb, {"start_urls": ["https://shop.example.com/"]}).json()
    assert second["config"]["include"] == [] and second["config"]["max_pages"] == 100
    assert second["config"]["schedule"] == "manual"
    assert second["current_run"]["id"] != first["current_run"]["id"]
    assert second["last_run"]["id"] == first["current_run"]["id"] and second["last_run"]["status"] == "cancelled"
    assert KbCrawlConfig.objects.get(widget=widget).generation == 2


def running(widget, **fields):
    return KbCrawlRun.objects.create(
        widget=widget,
        generation=KbCrawlConfig.objects.get(widget=widget).generation,
        trigger="put",
        status="running",
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        **fields,
    )


def test_put_and_delete_while_a_crawl_runs_are_409_and_change_nothing(kb, widget, assert_problem):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    run = running(widget)
    problem = assert_problem(put(kb, body(max_pages=7)), 409, "kb_crawl_running")
    assert problem["run_id"] == run.pk
    assert_problem(kb.delete(CRAWLER), 409, "kb_crawl_running")
    assert KbCrawlConfig.objects.get(widget=widget).max_pages == 100
    assert kb.get(CRAWLER).json()["current_run"]["status"] == "running"


def test_the_409_says_how_to_cancel_the_running_crawl(kb, widget, assert_problem):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    running(widget)
    problem = assert_problem(kb.delete(CRAWLER), 409, "kb_crawl_running")
    assert "cancel_running=true" in problem["detail"]


def test_delete_with_cancel_running_cancels_the_running_crawl_and_removes_the_configuration(kb, widget):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    run = running(widget)
    assert kb.delete(CRAWLER + "?cancel_running=true").status_code == 204
    run.refresh_from_db()
    assert (run.status, run.error) == ("cancelled", "replaced") and run.finished_at is not None
    assert not KbCrawlConfig.objects.filter(widget=widget).exists()
    answer = kb.get(CRAWLER).json()
    assert answer["current_run"] is None and answer["last_run"]["id"] == run.pk
    assert answer["last_run"]["status"] == "cancelled"


def test_put_with_cancel_running_cancels_the_running_crawl_and_queues_a_new_one(kb, widget):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    run = running(widget)
    answer = kb.put(CRAWLER + "?cancel_running=true", body(max_pages=7), format="json", **idem())
    assert answer.status_code == 200, answer.content
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert answer.json()["config"]["max_pages"] == 7 and answer.json()["current_run"]["status"] == "queued"


@pytest.mark.parametrize("query", ["cancel_running=yes", "cancel_running=true&cancel_running=true", "force=true"])
def test_a_bad_cancel_parameter_is_422_and_cancels_nothing(kb, widget, assert_problem, query):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    run = running(widget)
    assert_problem(kb.delete(f"{CRAWLER}?{query}"), 422)
    assert_problem(kb.put(f"{CRAWLER}?{query}", body(), format="json", **idem()), 422)
    run.refresh_from_db()
    assert run.status == "running" and KbCrawlConfig.objects.filter(widget=widget).exists()


def test_a_running_crawl_silent_for_long_is_taken_as_dead(kb, widget):
    put(kb, body())
    KbCrawlRun.objects.filter(widget=widget).update(status="finished", finished_at=timezone.now())
    stale = running(widget)
    KbCrawlRun.objects.filter(pk=stale.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert put(kb, body()).status_code == 200
    stale.refresh_from_db()
    assert stale.status == "failed" and stale.error == "worker_lost"


def test_delete_cancels_the_queued_crawl_and_removes_the_configuration(kb, widget):
    queued = put(kb, body()).json()["current_run"]
    response = kb.delete(CRAWLER)
    assert response.status_code == 204
    state = kb.get(CRAWLER).json()
    assert state["config"] is None and state["current_run"] is None
    assert state["last_run"]["id"] == queued["id"] and state["last_run"]["status"] == "cancelled"
    assert kb.delete(CRAWLER).status_code == 204  # nothing configured: still 204


def test_a_start_url_to_a_private_or_unresolvable_address_is_422(kb, widget, assert_problem):
    private = assert_problem(put(kb, body(start_urls=["https://intranet.test/"])), 422)
    missing = assert_problem(put(kb, body(start_urls=["https://nowhere.test/"])), 422)
    assert private["errors"]["start_urls"] == ["https://intranet.test/: The host does not resolve to a public address."]
    assert missing["errors"]["start_urls"] == ["https://nowhere.test/: The host does not resolve to a public address."]
    assert_problem(put(kb, body(start_urls=["https://169.254.169.254/latest"])), 422)
    assert not KbCrawlConfig.objects.exists() and not KbCrawlRun.objects.exists()


@pytest.mark.parametrize(
    "field,value",
    [
        ("start_urls", []),
        ("start_urls", ["https://docs.example.com/"] * 2),
        ("start_urls", [f"https://docs.example.com/{i}" for i in range(11)]),
        ("start_urls", ["http://docs.example.com/"]),
        ("start_urls", ["https://user:pw@docs.example.com/"]),
        ("start_urls", ["docs.example.com"]),
        ("start_urls", ["https://[::1"]),
        ("start_urls", [5]),
        ("start_urls", "https://docs.example.com/"),
        ("include", ["docs/*"]),
        ("include", [""]),
        ("include", ["/x"] * 51),
        ("exclude", [7]),
        ("exclude", "/x"),
        ("max_pages", 0),
        ("max_pages", 1001),
        ("max_pages", "10"),
        ("max_pages", True),
        ("max_depth", -1),
        ("max_depth", 6),
        ("max_depth", 2.5),
        ("schedule", "hourly"),
        ("schedule", None),
        ("surprise", 1),
    ],
)
def test_each_bad_field_is_422_and_stores_nothing(kb, assert_problem, field, value):
    problem = assert_problem(put(kb, {**body(), field: value}), 422)
    assert [name for name in problem["errors"] if name.split(".")[0] == field], problem["errors"]
    assert not KbCrawlConfig.objects.exists()


def test_start_urls_are_required(kb, assert_problem):
    assert "start_urls" in assert_problem(put(kb, {"max_pages": 3}), 422)["errors"]


def test_limits_at_the_edges_are_accepted(kb):
    response = put(kb, body(max_pages=1000, max_depth=0, schedule="weekly", exclude=["*.pdf"]))
    assert response.status_code == 200
    assert response.json()["config"]["max_pages"] == 1000 and response.json()["config"]["max_depth"] == 0


def test_put_needs_a_json_body(kb, assert_problem):
    assert_problem(kb.put(CRAWLER, "start_urls=x", content_type="application/x-www-form-urlencoded", **idem()), 415)
    assert not KbCrawlConfig.objects.exists()


def test_put_needs_the_idempotency_key_and_refuses_its_reuse(kb, assert_problem):
    assert_problem(kb.put(CRAWLER, body(), format="json"), 400)
    headers = idem()
    assert put(kb, body(), **headers).status_code == 200
    assert_problem(put(kb, body(max_pages=3), **headers), 409)
    assert KbCrawlConfig.objects.get().max_pages == 100 and KbCrawlRun.objects.count() == 1


def test_a_refused_put_leaves_its_key_free(kb, assert_problem):
    headers = idem()
    assert_problem(put(kb, body(start_urls=["https://intranet.test/"]), **headers), 422)
    assert put(kb, body(), **headers).status_code == 200


def test_scopes(api, assert_problem):
    reader, writer = api(["kb:read"]), api(["kb:write"])
    assert_problem(put(reader, body()), 403, "missing_scope")
    assert_problem(reader.delete(CRAWLER), 403, "missing_scope")
    assert_problem(writer.get(CRAWLER), 403, "missing_scope")
    assert reader.get(CRAWLER).status_code == 200
    assert put(writer, body()).status_code == 200
    assert writer.delete(CRAWLER).status_code == 204


def test_without_a_token_is_401(client, assert_problem):
    assert_problem(client.get(CRAWLER), 401)
    assert_problem(client.put(CRAWLER, body(), content_type="application/json"), 401)
    assert_problem(client.delete(CRAWLER), 401)


def test_each_widget_sees_only_its_own_crawler(kb, api, other_widget):
    put(kb, body())
    assert api(["kb:read", "kb:write"], w=other_widget).get(CRAWLER).json() == {
        "config": None,
        "current_run": None,
        "last_run": None,
    }
    assert api(["kb:write"], w=other_widget).delete(CRAWLER).status_code == 204
    assert KbCrawlConfig.objects.count() == 1


def test_unknown_query_parameters_are_422(kb, assert_problem):
    assert_problem(kb.get(CRAWLER, {"x": 1}), 422)


def test_get_is_a_constant_number_of_queries(kb, widget):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    put(kb, body())

    def count():
        with CaptureQueriesContext(connection) as queries:
            assert kb.get(CRAWLER).status_code == 200
        return len(queries)

    few = count()
    for _ in range(5):
        KbCrawlRun.objects.create(widget=widget, generation=1, trigger="put", status="finished")
    assert count() == few
    # token, rate limit and the three reads: config, current run, last run
    assert few <= 9

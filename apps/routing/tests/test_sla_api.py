"""/v1/sla-policies: list, create, read, PATCH, DELETE (product-decisions.md "Routing that never loses
a visitor")."""

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agents.tests.factories import DepartmentFactory
from apps.audit.models import AuditEntry
from apps.routing.models import SlaClock, SlaPolicy
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
_keys = itertools.count()


@pytest.fixture
def idem():
    def make() -> dict:
        return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"sla-{next(_keys)}"}

    return make


URL = "/api/v1/sla-policies"
READ, WRITE = ["sla:read"], ["sla:write"]
MEMBERS = {
    "id",
    "name",
    "department_id",
    "first_response_seconds",
    "next_response_seconds",
    "resolution_seconds",
    "business_hours_only",
}


def url(row_or_id) -> str:
    return f"{URL}/{getattr(row_or_id, 'pk', row_or_id)}"


def body(**overrides) -> dict:
    return {"name": "Standard", "first_response_seconds": 300, "resolution_seconds": 86400, **overrides}


def policy(widget, **kwargs) -> SlaPolicy:
    return SlaPolicy.objects.create(widget=widget, **{"name": "P", "first_response_seconds": 120, **kwargs})


def snapshot(widget) -> list:
    return list(SlaPolicy.objects.filter(widget=widget).order_by("id").values())


# --- list ----------------------------------------------------------------------------------------------


def test_list_serves_the_widgets_policies_oldest_first(api, widget, other_widget):
    rows = [policy(widget, name="Default"), policy(widget, name="Sales", department=DepartmentFactory(widget=widget))]
    policy(other_widget, name="Foreign")
    data = api(scopes=READ).get(URL).json()["data"]
    assert [r["id"] for r in data] == [r.pk for r in rows]
    assert set(data[0]) == MEMBERS
    assert data[1]["department_id"] == rows[1].department_id and data[0]["department_id"] is None


def test_list_pages_by_cursor(api, widget):
    departments = [DepartmentFactory(widget=widget) for _ in range(4)]
    ids = [policy(widget, department=d).pk for d in departments]
    client = api(scopes=READ)
    first = client.get(URL, {"limit": 2}).json()
    second = client.get(URL, {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [r["id"] for r in first["data"] + second["data"]] == ids and second["next_cursor"] is None


def test_list_refuses_unknown_parameters(api, widget):
    assert_problem(api(scopes=READ).get(URL, {"department_id": "1"}), 422)


def test_list_needs_a_token_and_the_read_scope(api, client, widget):
    assert_problem(client.get(URL), 401)
    assert_problem(api(scopes=WRITE).get(URL), 403, "missing_scope")


def test_list_query_count_does_not_grow_with_rows(api, widget):
    client = api(scopes=READ)
    policy(widget)
    client.get(URL)
    with CaptureQueriesContext(connection) as one:
        assert client.get(URL).status_code == 200
    for _ in range(10):
        policy(widget, department=DepartmentFactory(widget=widget))
    with CaptureQueriesContext(connection) as many:
        assert len(client.get(URL).json()["data"]) == 11
    assert len(many) == len(one)


# --- create --------------------------------------------------------------------------------------------


def test_create_stores_answers_and_audits_the_policy(api, widget, idem):
    department = DepartmentFactory(widget=widget)
    response = api(scopes=WRITE).post(
        URL, body(department_id=department.pk, business_hours_only=True), format="json", **idem()
    )
    assert response.status_code == 201, response.content
    data = response.json()
    row = SlaPolicy.objects.get(pk=data["id"], widget=widget)
    assert data == {
        "id": row.pk,
        "name": "Standard",
        "department_id": department.pk,
        "first_response_seconds": 300,
        "next_response_seconds": None,
        "resolution_seconds": 86400,
        "business_hours_only": True,
    }
    entry = AuditEntry.objects.get(widget=widget, action="sla_policy.created")
    assert entry.target_id == str(row.pk)


def test_create_without_department_is_the_default(api, widget, idem):
    data = api(scopes=WRITE).post(URL, body(), format="json", **idem()).json()
    assert data["department_id"] is None and data["business_hours_only"] is False


def test_create_needs_a_token_the_write_scope_and_a_key(api, client, widget, idem):
    assert_problem(client.post(URL, body(), content_type="application/json", **idem()), 401)
    assert_problem(api(scopes=READ).post(URL, body(), format="json", **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).post(URL, body(), format="json"), 400, "idempotency_key_missing")
    assert not SlaPolicy.objects.exists()


def test_a_second_default_is_409_and_changes_nothing(api, widget, idem):
    policy(widget)
    before = snapshot(widget)
    problem = assert_problem(api(scopes=WRITE).post(URL, body(), format="json", **idem()), 409, "sla_default_exists")
    assert problem["status"] == 409
    assert snapshot(widget) == before
    assert not AuditEntry.objects.filter(action="sla_policy.created").exists()


def test_a_second_policy_of_a_department_is_409_and_changes_nothing(api, widget, idem):
    department = DepartmentFactory(widget=widget)
    policy(widget, department=department)
    before = snapshot(widget)
    response = api(scopes=WRITE).post(URL, body(department_id=department.pk), format="json", **idem())
    assert_problem(response, 409, "sla_department_taken")
    assert snapshot(widget) == before


def test_the_default_of_another_widget_does_not_count(api, widget, other_widget, idem):
    policy(other_widget)
    assert api(scopes=WRITE).post(URL, body(), format="json", **idem()).status_code == 201


@pytest.mark.parametrize("foreign", [True, False])
def test_a_foreign_or_missing_department_is_422_at_department_id(api, widget, other_widget, idem, foreign):
    department_id = DepartmentFactory(widget=other_widget).pk if foreign else 999999
    response = api(scopes=WRITE).post(URL, body(department_id=department_id), format="json", **idem())
    problem = assert_problem(response, 422)
    assert set(problem["errors"]) == {"department_id"}
    assert not SlaPolicy.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": 5},
        {"first_response_seconds": 59},
        {"next_response_seconds": 604801},
        {"resolution_seconds": "600"},
        {"resolution_seconds": 600.5},
        {"first_response_seconds": True},
        {"business_hours_only": "yes"},
        {"department_id": "1"},
        {"unknown": 1},
    ],
)
def test_create_refuses_bad_input_with_422(api, widget, idem, bad):
    problem = assert_problem(api(scopes=WRITE).post(URL, body(**bad), format="json", **idem()), 422)
    assert set(problem["errors"]) == set(bad)
    assert not SlaPolicy.objects.exists()


def test_create_refuses_a_missing_name(api, widget, idem):
    problem = assert_problem(api(scopes=WRITE).post(URL, {"resolution_seconds": 60}, format="json", **idem()), 422)
    assert set(problem["errors"]) == {"name"}


def test_the_bounds_are_accepted(api, widget, idem):
    data = (
        api(scopes=WRITE)
        .post(URL, body(first_response_seconds=60, next_response_seconds=604800), format="json", **idem())
        .json()
    )
    assert (data["first_response_seconds"], data["next_response_seconds"]) == (60, 604800)


# --- read, change, delete -------------------------------------------------------------------------------


def test_read_answers_the_policy_and_a_foreign_id_is_404(api, widget, other_widget):
    row, foreign = policy(widget), policy(other_widget)
    client = api(scopes=READ)
    assert client.get(url(row)).json()["id"] == row.pk
    assert_problem(client.get(url(foreign)), 404)
    assert_problem(client.get(url(999999)), 404)
    assert_problem(api(scopes=WRITE).get(url(row)), 403, "missing_scope")


def test_patch_merges_and_audits(api, widget, idem):
    row = policy(widget, resolution_seconds=3600)
    department = DepartmentFactory(widget=widget)
    response = api(scopes=WRITE).patch(
        url(row), {"department_id": department.pk, "next_response_seconds": 600}, format="json", **idem()
    )
    assert response.status_code == 200, response.content
    row.refresh_from_db()
    assert (row.department_id, row.next_response_seconds, row.resolution_seconds, row.name) == (
        department.pk,
        600,
        3600,
        "P",
    )
    entry = AuditEntry.objects.get(widget=widget, action="sla_policy.changed")
    assert set(entry.changes) == {"department", "next_response_seconds"} or set(entry.changes) == {
        "department_id",
        "next_response_seconds",
    }


def test_patch_to_null_clears_a_clock(api, widget, idem):
    row = policy(widget, resolution_seconds=3600)
    data = api(scopes=WRITE).patch(url(row), {"resolution_seconds": None}, format="json", **idem()).json()
    assert data["resolution_seconds"] is None and data["first_response_seconds"] == 120


def test_patch_to_a_taken_department_or_default_is_409_and_changes_nothing(api, widget, idem):
    department = DepartmentFactory(widget=widget)
    policy(widget)
    taken = policy(widget, department=department)
    other = policy(widget, department=DepartmentFactory(widget=widget))
    before = snapshot(widget)
    client = api(scopes=WRITE)
    assert_problem(
        client.patch(url(other), {"department_id": department.pk}, format="json", **idem()), 409, "sla_department_taken"
    )
    assert_problem(
        client.patch(url(taken), {"department_id": None}, format="json", **idem()), 409, "sla_default_exists"
    )
    assert snapshot(widget) == before


def test_patch_keeps_its_own_department(api, widget, idem):
    row = policy(widget, department=DepartmentFactory(widget=widget))
    response = api(scopes=WRITE).patch(
        url(row), {"department_id": row.department_id, "name": "N"}, format="json", **idem()
    )
    assert response.status_code == 200


def test_patch_refusals(api, widget, other_widget, idem):
    row, foreign = policy(widget), policy(other_widget)
    client = api(scopes=WRITE)
    assert_problem(client.patch(url(foreign), {"name": "x"}, format="json", **idem()), 404)
    problem = assert_problem(
        client.patch(url(row), {"department_id": DepartmentFactory(widget=other_widget).pk}, format="json", **idem()),
        422,
    )
    assert set(problem["errors"]) == {"department_id"}
    assert_problem(client.patch(url(row), {"first_response_seconds": 10}, format="json", **idem()), 422)
    assert_problem(api(scopes=READ).patch(url(row), {"name": "x"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(client.patch(url(row), {"name": "x"}, format="json"), 400, "idempotency_key_missing")
    row.refresh_from_db()
    assert row.name == "P" and row.department_id is None


def test_delete_removes_audits_and_stops_its_running_clocks(api, widget, idem):
    from django.utils import timezone

    from apps.chats.tests.factories import ChatFactory

    row = policy(widget)
    chat = ChatFactory(widget=widget)
    now = timezone.now()
    SlaClock.objects.create(
        widget=widget, chat=chat, policy_id=row.pk, kind="first_response", started_at=now, due_at=now
    )
    assert api(scopes=WRITE).delete(url(row), **idem()).status_code == 204
    assert not SlaPolicy.objects.filter(pk=row.pk).exists()
    clock = SlaClock.objects.get(chat=chat)
    assert clock.stopped_at is not None and clock.met is None and clock.breached_at is None
    assert AuditEntry.objects.filter(widget=widget, action="sla_policy.deleted", target_id=str(row.pk)).exists()


def test_delete_refusals(api, widget, other_widget, idem):
    row, foreign = policy(widget), policy(other_widget)
    assert_problem(api(scopes=WRITE).delete(url(foreign), **idem()), 404)
    assert_problem(api(scopes=READ).delete(url(row), **idem()), 403, "missing_scope")
    assert_problem(api(scopes=WRITE).delete(url(row)), 400, "idempotency_key_missing")
    assert SlaPolicy.objects.count() == 2

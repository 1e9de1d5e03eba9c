"""Improvement wishes: submit (the provider proposes asynchronously), list, read with the decision
trail, a side-effect-free preview, approve (stored proposal, version, probation), reject, revert,
and the illegal transitions."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from apps.ai.models import Assistant
from apps.ai.tests.factories import AssistantFactory
from apps.learning import services
from apps.learning.models import PersonaVersion, Wish
from apps.learning.tests.conftest import PERSONA, PROMPT, PROPOSAL, idem
from tests.llm_fake import server_error
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
WISHES = "/api/v1/wishes"
TEXT = "Всегда называйте сроки доставки."


def submit(client, body=None, **headers):
    return client.post(WISHES, body if body is not None else {"text": TEXT}, format="json", **(headers or idem()))


@pytest.fixture
def proposed(client, assistant, provider, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        r = submit(client)
    assert r.status_code == 201, r.content
    return r.json()


def act(client, wish_id, action, body=None, **headers):
    kwargs = {"format": "json"} if body is not None else {}
    return client.post(f"{WISHES}/{wish_id}/{action}", body, **kwargs, **(headers or idem()))


def test_submit_stores_the_wish_and_the_provider_proposes_the_rewrite(client, assistant, provider, proposed):
    assert proposed["status"] == "proposing" and proposed["proposal_pending"] is True  # as answered
    assert proposed["assistant_id"] == assistant.pk and proposed["text"] == TEXT
    assert [e["action"] for e in proposed["decision_trail"]] == ["submitted"]
    sent = provider.api_requests[-1].json()["messages"]
    assert TEXT in sent[1]["content"] and PERSONA in sent[1]["content"]

    wish = client.get(f"{WISHES}/{proposed['id']}").json()
    assert wish["status"] == "proposed" and wish["proposal_pending"] is False
    assert [e["action"] for e in wish["decision_trail"]] == ["submitted", "proposed"]
    assert wish["decision_trail"][0]["actor"]["type"] == "token"
    assert wish["decision_trail"][1]["actor"] == {"type": "system"}


def test_preview_shows_the_proposal_and_changes_nothing(client, assistant, proposed):
    before = Assistant.objects.values().get(pk=assistant.pk)
    preview = client.get(f"{WISHES}/{proposed['id']}/preview").json()
    assert preview["current"] == {"persona": PERSONA, "system_prompt": PROMPT}
    assert preview["proposed"] == PROPOSAL
    assert preview["changes"] == {"persona": True, "system_prompt": True}
    assert preview["approvable"] is True and preview["stale"] is False
    assert Assistant.objects.values().get(pk=assistant.pk) == before
    assert not PersonaVersion.objects.exists()
    assert Wish.objects.get().status == "proposed"
    assert_problem(client.get(f"{WISHES}/{proposed['id']}/preview?x=1"), 422)


def test_approve_applies_the_stored_proposal_versions_it_and_starts_probation(client, assistant, provider, proposed):
    calls = len(provider.api_requests)
    r = act(client, proposed["id"], "approve", {"probation_hours": 24, "note": "Хорошо"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["status"] == "approved" and body["applied_version"] == 1 and body["probation_until"]
    assert body["decision_trail"][-1]["action"] == "approved" and body["decision_trail"][-1]["note"] == "Хорошо"
    assert len(provider.api_requests) == calls  # approval never calls the provider
    assistant.refresh_from_db()
    assert (assistant.persona, assistant.system_prompt) == (PROPOSAL["persona"], PROPOSAL["system_prompt"])
    version = client.get("/api/v1/ai/learning/persona-versions/1").json()
    assert version["source"] == "wish" and version["previous"] == {"persona": PERSONA, "system_prompt": PROMPT}
    assert version["probation"]["state"] == "running"
    gate = client.get("/api/v1/ai/learning/kill-switch").json()["gates"][2]
    assert gate["open"] is False and gate["version"] == 1
    history = client.get("/api/v1/ai/learning/history").json()["data"]
    assert history[0]["kind"] == "wish_approved" and history[0]["wish_id"] == proposed["id"]
    # Approved: approve and reject are illegal now.
    body = assert_problem(act(client, proposed["id"], "approve", {}), 409, "wish_transition_not_allowed")
    assert body["wish_status"] == "approved" and body["allowed"] == ["revert"]
    assert_problem(act(client, proposed["id"], "reject"), 409, "wish_transition_not_allowed")


def test_approve_before_the_proposal_is_409_proposal_pending(
    client, assistant, provider, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        wish = submit(client).json()
    preview = client.get(f"{WISHES}/{wish['id']}/preview").json()
    assert preview["proposal_pending"] is True and preview["proposed"] is None and preview["approvable"] is False
    assert_problem(act(client, wish["id"], "approve", {}), 409, "proposal_pending")
    # Rejecting a pending wish is allowed; the late proposal then leaves it rejected.
    assert act(client, wish["id"], "reject").json()["status"] == "rejected"
    services.make_wish_proposal(wish_id=wish["id"])
    assert Wish.objects.get().status == "rejected"


def test_reject_declines_without_applying(client, assistant, proposed):
    body = act(client, proposed["id"], "reject").json()
    assert body["status"] == "rejected" and body["decision_trail"][-1]["action"] == "rejected"
    assistant.refresh_from_db()
    assert assistant.persona == PERSONA and not PersonaVersion.objects.exists()
    for action, body in (("approve", {}), ("reject", None), ("revert", None)):
        problem = assert_problem(act(client, proposed["id"], action, body), 409, "wish_transition_not_allowed")
        assert problem["allowed"] == []


def test_revert_undoes_the_change(client, assistant, proposed):
    act(client, proposed["id"], "approve", {})
    body = act(client, proposed["id"], "revert").json()
    assert body["status"] == "reverted" and body["revert_version"] == 2
    assistant.refresh_from_db()
    assert (assistant.persona, assistant.system_prompt) == (PERSONA, PROMPT)
    v1 = client.get("/api/v1/ai/learning/persona-versions/1").json()
    assert v1["probation"]["state"] == "reverted"
    v2 = client.get("/api/v1/ai/learning/persona-versions/2").json()
    assert v2["source"] == "revert" and v2["reverted_to"] == 1 and v2["restored"] == "previous"
    assert_problem(act(client, proposed["id"], "revert"), 409, "wish_transition_not_allowed")
    assert [e["action"] for e in body["decision_trail"]] == ["submitted", "proposed", "approved", "reverted"]


def test_a_persona_edited_since_blocks_approve_and_revert(
    client, assistant, provider, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = submit(client).json()
        second = submit(client).json()
    Assistant.objects.filter(pk=assistant.pk).update(persona="Owner's edit")
    preview = client.get(f"{WISHES}/{first['id']}/preview").json()
    assert preview["stale"] is True and preview["approvable"] is False
    assert_problem(act(client, first["id"], "approve", {}), 409, "persona_changed")
    Assistant.objects.filter(pk=assistant.pk).update(persona=PERSONA)
    assert act(client, first["id"], "approve", {}).status_code == 200
    # The second wish was proposed against the old pair: stale now.
    assert_problem(act(client, second["id"], "approve", {}), 409, "persona_changed")
    Assistant.objects.filter(pk=assistant.pk).update(persona="Another edit")
    assert_problem(act(client, first["id"], "revert"), 409, "persona_changed")
    assert Wish.objects.get(pk=first["id"]).status == "approved"


def test_a_failed_proposal_can_only_be_rejected(client, assistant, provider, django_capture_on_commit_callbacks):
    provider.script(*[server_error(503)] * 4)
    with django_capture_on_commit_callbacks(execute=True):
        wish = submit(client).json()
    read = client.get(f"{WISHES}/{wish['id']}").json()
    assert read["status"] == "proposal_failed" and read["proposal_error"] == "provider_server_error"
    assert_problem(act(client, wish["id"], "approve", {}), 409, "wish_transition_not_allowed")
    assert act(client, wish["id"], "reject").status_code == 200


def test_submit_input_rules(client, assistant, provider, other_widget):
    for body in (
        {},
        {"text": ""},
        {"text": "x" * 2001},
        {"text": 5},
        {"text": "a\x00b"},
        {"text": "a", "x": 1},
        {"text": "a", "assistant_id": "1"},
    ):
        assert_problem(submit(client, body), 422)
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(submit(client, {"text": "a", "assistant_id": foreign.pk}), 404, "not_found")
    assert_problem(client.post(WISHES, "text=a", content_type="text/plain", **idem()), 415)
    assert_problem(client.post(WISHES, {"text": "a"}, format="json"), 400, "idempotency_key_missing")
    assert not Wish.objects.exists()


def test_submit_without_assistant_or_credential_is_409(client, widget):
    assert_problem(submit(client), 409, "no_assistant")
    AssistantFactory(widget=widget, is_default=True)
    assert_problem(submit(client), 409, "credential_unavailable")


def test_submit_for_a_selected_assistant(client, widget, assistant, provider, django_capture_on_commit_callbacks):
    other = AssistantFactory(widget=widget, persona="Other")
    with django_capture_on_commit_callbacks(execute=True):
        wish = submit(client, {"text": TEXT, "assistant_id": other.pk}).json()
    act(client, wish["id"], "approve", {})
    other.refresh_from_db()
    assistant.refresh_from_db()
    assert other.persona == PROPOSAL["persona"] and assistant.persona == PERSONA


def test_key_reuse_is_409_and_makes_no_second_wish(client, assistant, provider):
    key = idem()
    first = submit(client, **key)
    body = assert_problem(submit(client, **key), 409, "idempotency_key_reused")
    assert body["previous"]["status"] == 201 and body["previous"]["resource_id"] == str(first.json()["id"])
    assert Wish.objects.count() == 1


def test_scopes_and_authentication(api, assistant, proposed):
    wid = proposed["id"]
    reader = api(["ai:read"])
    writer = api(["ai:read", "ai:write"])
    assert_problem(APIClient().get(WISHES), 401)
    assert_problem(APIClient().post(f"{WISHES}/{wid}/approve", {}, format="json", **idem()), 401)
    assert_problem(api(["ai:write"]).get(WISHES), 403, "missing_scope")
    assert_problem(api(["ai:write"]).get(f"{WISHES}/{wid}/preview"), 403, "missing_scope")
    assert_problem(reader.post(WISHES, {"text": "a"}, format="json", **idem()), 403, "missing_scope")
    assert_problem(writer.post(f"{WISHES}/{wid}/approve", {}, format="json", **idem()), 403, "missing_scope")
    assert_problem(writer.post(f"{WISHES}/{wid}/revert", **idem()), 403, "missing_scope")
    assert_problem(reader.post(f"{WISHES}/{wid}/reject", **idem()), 403, "missing_scope")
    assert Wish.objects.get().status == "proposed"


def test_approve_and_reject_input_rules(client, proposed):
    wid = proposed["id"]
    for body in ({"probation_hours": 0}, {"probation_hours": 169}, {"probation_hours": "24"}, {"x": 1}):
        assert_problem(act(client, wid, "approve", body), 422)
    r = client.post(f"{WISHES}/{wid}/approve", "probation_hours=1", content_type="text/plain", **idem())
    assert_problem(r, 415)
    assert_problem(act(client, wid, "reject", {"reason": "no"}), 422)
    assert_problem(act(client, wid, "revert", {"x": 1}), 422)
    assert_problem(client.post(f"{WISHES}/{wid}/reject"), 400, "idempotency_key_missing")
    assert Wish.objects.get().status == "proposed"


def test_foreign_and_missing_wishes_are_the_same_404(api, other_widget, proposed):
    stranger = api(["ai:read", "ai:write", "ai:apply"], w=other_widget)
    wid = proposed["id"]
    for client_, target in ((stranger, wid), (api(["ai:read", "ai:write", "ai:apply"]), wid + 1000)):
        assert_problem(client_.get(f"{WISHES}/{target}"), 404, "not_found")
        assert_problem(client_.get(f"{WISHES}/{target}/preview"), 404, "not_found")
        for action in ("approve", "reject", "revert"):
            kwargs = {"data": {}, "format": "json"} if action == "approve" else {}
            assert_problem(client_.post(f"{WISHES}/{target}/{action}", **kwargs, **idem()), 404, "not_found")
    assert stranger.get(WISHES).json()["data"] == []


def test_list_filters_pages_and_query_count(client, widget, assistant, provider, django_capture_on_commit_callbacks):
    other = AssistantFactory(widget=widget)
    with django_capture_on_commit_callbacks(execute=True):
        ids = [submit(client).json()["id"] for _ in range(4)]
        other_id = submit(client, {"text": "x", "assistant_id": other.pk}).json()["id"]
    act(client, ids[0], "approve", {})
    act(client, ids[1], "reject")
    listed = client.get(f"{WISHES}?limit=2").json()
    assert [w["id"] for w in listed["data"]] == [other_id, ids[3]] and listed["next_cursor"]
    rest = client.get(f"{WISHES}?limit=10&cursor={listed['next_cursor']}").json()
    assert [w["id"] for w in rest["data"]] == [ids[2], ids[1], ids[0]]
    assert [w["id"] for w in client.get(f"{WISHES}?status=rejected").json()["data"]] == [ids[1]]
    assert [w["id"] for w in client.get(f"{WISHES}?assistant_id={other.pk}").json()["data"]] == [other_id]
    approved = client.get(f"{WISHES}?status=approved").json()["data"][0]
    assert approved["applied_version"] == 1 and "decision_trail" not in approved
    for query in ("status=done", "assistant_id=999999", "limit=101", "cursor=abc", "q=1"):
        assert_problem(client.get(f"{WISHES}?{query}"), 422)
    with CaptureQueriesContext(connection) as few:
        client.get(f"{WISHES}?limit=1")
    with CaptureQueriesContext(connection) as many:
        client.get(f"{WISHES}?limit=100")
    assert len(many) == len(few)
    assert json.loads(json.dumps(listed))  # plain JSON


def test_wishes_are_limited_per_widget_and_a_refused_one_asks_no_provider(
    client, widget, assistant, provider, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(services.WISH_BUDGET.limit):
            assert submit(client).status_code == 201
    asked = len(provider.api_requests)
    with django_capture_on_commit_callbacks(execute=True):
        r = submit(client)
    assert_problem(r, 429)
    assert "Retry-After" in r
    assert Wish.objects.filter(widget=widget).count() == services.WISH_BUDGET.limit
    assert len(provider.api_requests) == asked


def test_reject_and_revert_take_an_empty_json_object_as_no_body(client, assistant, provider, proposed):
    rejected = act(client, proposed["id"], "reject", {})
    assert rejected.status_code == 200, rejected.content
    assert rejected.json()["status"] == "rejected"

    with_spaces = client.post(f"{WISHES}/{proposed['id']}/revert", " { } ", content_type="application/json", **idem())
    assert_problem(with_spaces, 409, "wish_transition_not_allowed")  # past the body check: the state's answer


def test_revert_takes_an_empty_json_object_as_no_body(client, assistant, proposed):
    act(client, proposed["id"], "approve", {})
    reverted = act(client, proposed["id"], "revert", {})
    assert reverted.status_code == 200, reverted.content
    assert reverted.json()["status"] == "reverted"


@pytest.mark.parametrize("written", ["%0B{id}", "%20{id}", "+{id}", "{id}%20", "0_{id}", "{fullwidth}"])
def test_a_wish_is_found_only_at_its_id_written_in_plain_digits(client, proposed, written):
    wish_id = proposed["id"]
    fullwidth = "".join(chr(0xFF10 + int(digit)) for digit in str(wish_id))
    r = client.get(f"{WISHES}/{written.format(id=wish_id, fullwidth=fullwidth)}")
    assert_problem(r, 404)
    assert client.get(f"{WISHES}/{wish_id}").status_code == 200

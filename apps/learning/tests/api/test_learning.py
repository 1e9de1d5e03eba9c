"""Self-learning: the control panel, the three gates, tune (a cycle through the provider), cycles,
the append-only history, persona versions with both snapshots, and revert."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from apps.ai.models import AiSettings, Assistant
from apps.ai.tests.factories import AiOperatorFactory, AssistantFactory, CredentialFactory
from apps.chats.models import Message, Rating
from apps.erasure.models import PendingErasure
from apps.learning import services
from apps.learning.models import HistoryEntry, PersonaVersion, TuningCycle
from apps.learning.tests.conftest import PERSONA, PROMPT, PROPOSAL, SUPPORT_SECRET, idem, make_evidence
from tests.llm_fake import ok, server_error
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db
BASE = "/api/v1/ai/learning"


def tune(client, query="", **headers):
    return client.post(f"{BASE}/tune{query}", **(headers or idem()))


@pytest.fixture
def ready(widget, assistant, operator, provider, switch_on):
    """Every gate open: switch on, 5 new evidence items, no probation."""
    make_evidence(widget, operator)
    return provider


def run_tune(client, capture, query=""):
    with capture(execute=True):
        r = tune(client, query)
    assert r.status_code == 202, r.content
    return r.json()


# --- the control panel and the gates ----------------------------------------------------------------------


def test_control_panel_without_an_assistant(client, widget):
    body = client.get(f"{BASE}/settings").json()
    assert body["learning_target"] is None and body["autonomous_tuning_enabled"] is False
    assert body["kill_switch"]["may_run"] is False
    assert body["policy"] == {
        "min_new_evidence": 5,
        "evidence_window_days": 30,
        "low_rating_max": 2,
        "probation_hours": 72,
        "schedule": "daily",
    }


def test_gates_open_one_by_one(client, widget, assistant, operator):
    gates = client.get(f"{BASE}/kill-switch").json()
    assert gates["assistant_id"] == assistant.pk and gates["may_run"] is False
    by_name = {g["name"]: g for g in gates["gates"]}
    assert by_name["master_switch"] == {"name": "master_switch", "open": False, "reason": "autonomous_tuning_disabled"}
    assert by_name["evidence"]["reason"] == "not_enough_evidence" and by_name["evidence"]["required"] == 5
    assert by_name["probation"]["open"] is True

    AiSettings.objects.update_or_create(widget=widget, defaults={"autonomous_tuning_enabled": True})
    make_evidence(widget, operator, escalations=2, low_ratings=1, unanswered=1)
    gates = client.get(f"{BASE}/kill-switch").json()
    assert gates["gates"][1]["new_evidence"] == {"escalations": 2, "low_ratings": 1, "unanswered": 1, "total": 4}
    assert gates["may_run"] is False

    make_evidence(widget, operator, escalations=0, low_ratings=1, unanswered=0)
    assert client.get(f"{BASE}/kill-switch").json()["may_run"] is True


def test_evidence_of_another_assistant_does_not_count(client, widget, assistant, switch_on):
    other = AssistantFactory(widget=widget)
    make_evidence(widget, AiOperatorFactory(assistant=other), unanswered=0)
    assert client.get(f"{BASE}/kill-switch").json()["gates"][1]["new_evidence"]["total"] == 0
    gates = client.get(f"{BASE}/kill-switch?assistant_id={other.pk}").json()
    assert gates["assistant_id"] == other.pk and gates["gates"][1]["new_evidence"]["total"] == 4


@pytest.mark.parametrize("path", ["settings", "kill-switch", "cycles", "persona-versions"])
def test_reads_refuse_an_unknown_or_foreign_assistant_with_422(client, assistant, other_widget, path):
    foreign = AssistantFactory(widget=other_widget)
    for query in (f"?assistant_id={foreign.pk}", "?assistant_id=abc", "?unknown=1"):
        assert_problem(client.get(f"{BASE}/{path}{query}"), 422)


def test_history_answers_a_foreign_assistant_with_404(client, assistant, other_widget):
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(client.get(f"{BASE}/history?assistant_id={foreign.pk}"), 404, "not_found")
    assert_problem(client.get(f"{BASE}/history?assistant_id={foreign.pk + 1000}"), 404, "not_found")
    assert_problem(client.get(f"{BASE}/history?limit=0"), 422)


@pytest.mark.parametrize("path", ["settings", "kill-switch", "cycles", "history", "persona-versions"])
def test_reads_need_a_token_and_ai_read(api, path, assistant):
    assert_problem(APIClient().get(f"{BASE}/{path}"), 401)
    assert_problem(api(["ai:write", "ai:apply"]).get(f"{BASE}/{path}"), 403, "missing_scope")


# --- tune -------------------------------------------------------------------------------------------------


def test_tune_runs_a_cycle_that_patches_the_persona_under_probation(
    client, widget, assistant, ready, django_capture_on_commit_callbacks
):
    cycle = run_tune(client, django_capture_on_commit_callbacks)
    assert cycle["status"] == "queued" and cycle["trigger"] == "manual" and cycle["assistant_id"] == assistant.pk
    assert cycle["evidence"] == {"escalations": 2, "low_ratings": 2, "unanswered": 1, "total": 5}

    assistant.refresh_from_db()
    assert assistant.persona == PROPOSAL["persona"] and assistant.system_prompt == PROPOSAL["system_prompt"]
    version = PersonaVersion.objects.get(assistant=assistant)
    assert (version.version, version.source) == (1, "tune")
    assert (version.previous_persona, version.previous_system_prompt) == (PERSONA, PROMPT)
    assert version.probation_until is not None

    # What the provider was shown: the live texts and the evidence, never a support reply.
    sent = ready.api_requests[-1].json()["messages"]
    assert PERSONA in sent[1]["content"] and "Когда доставка? 0" in sent[1]["content"]
    assert '"rating": 1' in sent[1]["content"] and '"rating_comment": "бесполезно"' in sent[1]["content"]
    assert '"topic": "gift cards"' in sent[1]["content"] and '"times_asked": 1' in sent[1]["content"]
    assert SUPPORT_SECRET not in json.dumps(sent, ensure_ascii=False)

    cycles = client.get(f"{BASE}/cycles").json()["data"]
    assert [c["id"] for c in cycles] == [cycle["id"]]
    assert cycles[0]["status"] == "applied" and cycles[0]["persona_version"] == 1
    assert cycles[0]["proposal"]["rationale"] == PROPOSAL["rationale"]

    history = client.get(f"{BASE}/history").json()["data"]
    assert [h["kind"] for h in history] == ["cycle_applied", "cycle_queued"]
    assert history[1]["actor"]["type"] == "token" and history[0]["version"] == 1

    gates = client.get(f"{BASE}/kill-switch").json()
    probation = gates["gates"][2]
    assert probation["open"] is False and probation["reason"] == "probation_in_progress" and probation["version"] == 1
    assert gates["gates"][1]["new_evidence"]["total"] == 0  # evidence starts again after the change
    panel = client.get(f"{BASE}/settings").json()
    assert panel["current_version"] == 1 and panel["live_matches_current_version"] is True
    assert panel["probation"]["version"] == 1 and panel["probation"]["source"] == "tune"
    assert panel["last_cycle"]["id"] == cycle["id"]


def test_a_cycle_shows_the_provider_nothing_of_a_contact_under_erasure(
    client, widget, assistant, ready, django_capture_on_commit_callbacks
):
    erased = [Message.objects.get(body=body).chat for body in ("Когда доставка? 1", "Есть размер 46? 1")]
    for chat in erased:
        PendingErasure.objects.create(widget=widget, contact_id=chat.contact_id)
    Rating.objects.filter(chat=erased[1]).update(comment="anna@example.com, call me")
    run_tune(client, django_capture_on_commit_callbacks)
    sent = json.dumps(ready.api_requests[-1].json()["messages"], ensure_ascii=False)
    assert "Когда доставка? 0" in sent and "Есть размер 46? 0" in sent
    assert "Когда доставка? 1" not in sent and "Есть размер 46? 1" not in sent and "anna@example.com" not in sent


def test_tune_is_refused_while_a_gate_is_closed_and_changes_nothing(client, widget, assistant, operator, provider):
    key = idem()
    body = assert_problem(tune(client, **key), 409, "tuning_gate_closed")
    assert {g["name"] for g in body["gates"]} == {"master_switch", "evidence"}
    assert not TuningCycle.objects.exists() and not HistoryEntry.objects.exists()
    # The refusal released the key.
    AiSettings.objects.update_or_create(widget=widget, defaults={"autonomous_tuning_enabled": True})
    make_evidence(widget, operator)
    assert tune(client, **key).status_code == 202


def test_tune_during_probation_and_with_a_cycle_in_progress_is_409(
    client, widget, assistant, operator, ready, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        assert tune(client).status_code == 202  # queued, not run
    assert_problem(tune(client), 409, "cycle_in_progress")
    services.run_cycle(cycle_id=TuningCycle.objects.get().pk)
    make_evidence(widget, operator)
    body = assert_problem(tune(client), 409, "tuning_gate_closed")
    assert body["gates"] == [{"name": "probation", "reason": "probation_in_progress"}]


def test_tune_without_assistant_or_credential_is_409(client, widget, switch_on, llm_fake):
    assert_problem(tune(client), 409, "no_assistant")
    assistant = AssistantFactory(widget=widget, is_default=True)
    make_evidence(widget, AiOperatorFactory(assistant=assistant))
    assert_problem(tune(client), 409, "credential_unavailable")


def test_tune_input_rules(client, api, assistant, ready, other_widget):
    assert_problem(client.post(f"{BASE}/tune"), 400, "idempotency_key_missing")
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(tune(client, f"?assistant_id={foreign.pk}"), 422)
    assert_problem(client.post(f"{BASE}/tune", {"assistant_id": 1}, format="json", **idem()), 422)
    assert_problem(api(["ai:read", "ai:write"]).post(f"{BASE}/tune", **idem()), 403, "missing_scope")
    assert_problem(APIClient().post(f"{BASE}/tune", **idem()), 401)
    assert not TuningCycle.objects.exists()


def test_tune_key_reuse_is_409_with_the_first_result(client, assistant, ready, django_capture_on_commit_callbacks):
    key = idem()
    with django_capture_on_commit_callbacks(execute=True):
        first = tune(client, **key)
    body = assert_problem(tune(client, **key), 409, "idempotency_key_reused")
    assert body["previous"]["status"] == 202 and body["previous"]["resource_id"] == str(first.json()["id"])
    assert TuningCycle.objects.count() == 1


def test_learning_follows_the_selected_assistant(
    client, widget, assistant, provider, switch_on, django_capture_on_commit_callbacks
):
    other = AssistantFactory(widget=widget, persona=PERSONA, system_prompt=PROMPT)
    make_evidence(widget, AiOperatorFactory(assistant=other))
    assert_problem(tune(client), 409, "tuning_gate_closed")  # the default has no evidence
    run_tune(client, django_capture_on_commit_callbacks, f"?assistant_id={other.pk}")
    other.refresh_from_db()
    assistant.refresh_from_db()
    assert other.persona == PROPOSAL["persona"] and assistant.persona == PERSONA
    assert client.get(f"{BASE}/persona-versions").json()["data"] == []
    versions = client.get(f"{BASE}/persona-versions?assistant_id={other.pk}").json()["data"]
    assert [v["assistant_id"] for v in versions] == [other.pk]


@pytest.mark.parametrize(
    "reply, error",
    [
        (server_error(500), "provider_server_error"),
        (ok("I would make it friendlier."), "invalid_proposal"),
        (ok(json.dumps({"persona": 5, "system_prompt": "x"})), "invalid_proposal"),
        (ok(json.dumps({"persona": "", "system_prompt": ""})), "invalid_proposal"),
        (ok(json.dumps({"persona": "Kind\ud800", "system_prompt": "x"})), "invalid_proposal"),
        (ok(json.dumps({"persona": "Kind", "system_prompt": "x", "rationale": "\udfff"})), "invalid_proposal"),
    ],
)
def test_a_failed_cycle_changes_nothing(client, assistant, ready, django_capture_on_commit_callbacks, reply, error):
    ready.script(reply, reply, reply, reply)
    run_tune(client, django_capture_on_commit_callbacks)
    cycle = TuningCycle.objects.get()
    assert cycle.status == "failed" and cycle.error == error and cycle.version is None
    assistant.refresh_from_db()
    assert assistant.persona == PERSONA and not PersonaVersion.objects.exists()
    assert client.get(f"{BASE}/cycles").json()["data"] == []
    assert client.get(f"{BASE}/history").json()["data"][0]["kind"] == "cycle_failed"


def test_a_proposal_in_a_code_fence_is_read_and_an_identical_one_is_no_change(
    client, assistant, ready, django_capture_on_commit_callbacks
):
    same = {"persona": PERSONA, "system_prompt": PROMPT, "rationale": "Nothing to change."}
    ready.script(ok("```json\n" + json.dumps(same) + "\n```"))
    run_tune(client, django_capture_on_commit_callbacks)
    assert TuningCycle.objects.get().status == "no_change"
    assert not PersonaVersion.objects.exists()


def test_an_owner_edit_during_the_provider_call_wins(
    client, widget, assistant, ready, django_capture_on_commit_callbacks, monkeypatch
):
    from apps.learning import proposals

    real = proposals.propose

    def edit_meanwhile(*args, **kwargs):
        answer = real(*args, **kwargs)
        Assistant.objects.filter(pk=assistant.pk).update(persona="Edited by the owner")
        return answer

    monkeypatch.setattr(proposals, "propose", edit_meanwhile)
    with django_capture_on_commit_callbacks(execute=False):
        tune(client)
    cycle = TuningCycle.objects.get()
    services.run_cycle(cycle_id=cycle.pk)
    cycle.refresh_from_db()
    assert cycle.status == "failed" and cycle.error == "persona_changed"
    assistant.refresh_from_db()
    assert assistant.persona == "Edited by the owner"


def test_scheduled_cycles_run_only_where_the_gates_are_open(
    widget, other_widget, assistant, ready, django_capture_on_commit_callbacks
):
    AssistantFactory(widget=other_widget, is_default=True)
    AiSettings.objects.create(widget=other_widget, autonomous_tuning_enabled=True)  # no evidence
    with django_capture_on_commit_callbacks(execute=True):
        assert services.queue_due_cycles() == 1
    cycle = TuningCycle.objects.get()
    assert cycle.widget == widget and cycle.trigger == "scheduled" and cycle.status == "applied"
    entry = HistoryEntry.objects.filter(kind="cycle_queued").get()
    assert entry.token_id is None


# --- persona versions and revert --------------------------------------------------------------------------


@pytest.fixture
def versioned(client, widget, assistant, ready, django_capture_on_commit_callbacks):
    """Version 1 made by a tuning cycle."""
    run_tune(client, django_capture_on_commit_callbacks)
    return assistant


def revert(client, version, body=None, **headers):
    return client.post(
        f"{BASE}/persona-versions/{version}/revert",
        body if body is not None else {},
        format="json",
        **(headers or idem()),
    )


def test_read_versions_with_both_snapshots(client, versioned, other_widget):
    listed = client.get(f"{BASE}/persona-versions").json()
    assert listed["next_cursor"] is None and [v["version"] for v in listed["data"]] == [1]
    one = client.get(f"{BASE}/persona-versions/1").json()
    assert one["source"] == "tune" and one["assistant_id"] == versioned.pk
    assert one["persona"] == PROPOSAL["persona"] and one["system_prompt"] == PROPOSAL["system_prompt"]
    assert one["previous"] == {"persona": PERSONA, "system_prompt": PROMPT}
    assert one["probation"]["state"] == "running"
    assert_problem(client.get(f"{BASE}/persona-versions/2"), 404, "not_found")
    assert_problem(client.get(f"{BASE}/persona-versions/abc"), 404, "not_found")
    assert_problem(client.get(f"{BASE}/persona-versions/99999999999999999999999"), 404, "not_found")
    foreign = AssistantFactory(widget=other_widget)
    PersonaVersion.objects.create(widget=other_widget, assistant=foreign, version=1, source="wish")
    assert_problem(client.get(f"{BASE}/persona-versions/1?assistant_id={foreign.pk}"), 404, "not_found")


def test_revert_makes_an_earlier_pair_live_as_a_new_version(client, versioned):
    r = revert(client, 1, {"restore": "previous"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["version"] == 2 and body["source"] == "revert" and body["reverted_to"] == 1
    assert body["restored"] == "previous" and body["persona"] == PERSONA and body["probation"] is None
    versioned.refresh_from_db()
    assert (versioned.persona, versioned.system_prompt) == (PERSONA, PROMPT)
    first = client.get(f"{BASE}/persona-versions/1").json()
    assert first["probation"]["state"] == "reverted"  # the revert ended the probation
    assert client.get(f"{BASE}/kill-switch").json()["gates"][2]["open"] is True

    # Forward again to version 1's own snapshot, then that is live: 409.
    assert revert(client, 1).json()["persona"] == PROPOSAL["persona"]
    assert_problem(revert(client, 1), 409, "version_live")
    assert [h["kind"] for h in client.get(f"{BASE}/history").json()["data"][:2]] == [
        "version_reverted",
        "version_reverted",
    ]


def test_revert_input_rules(client, api, versioned, other_widget):
    assert_problem(revert(client, 9), 404, "not_found")
    foreign = AssistantFactory(widget=other_widget)
    assert_problem(revert(client, 1, {"assistant_id": foreign.pk}), 404, "not_found")
    assert_problem(revert(client, 1, {"restore": "everything"}), 422)
    assert_problem(revert(client, 1, {"assistant_id": "1"}), 422)
    assert_problem(revert(client, 1, {"note": "x"}), 422)
    r = client.post(f"{BASE}/persona-versions/1/revert", "restore=previous", content_type="text/plain", **idem())
    assert_problem(r, 415)
    assert_problem(client.post(f"{BASE}/persona-versions/1/revert", {}, format="json"), 400, "idempotency_key_missing")
    assert_problem(
        api(["ai:read", "ai:write"]).post(f"{BASE}/persona-versions/1/revert", {}, format="json", **idem()),
        403,
        "missing_scope",
    )
    assert PersonaVersion.objects.count() == 1


def test_history_is_append_only_and_lists_are_paged_with_fixed_queries(client, versioned):
    for _ in range(3):
        revert(client, 1, {"restore": "previous"})
        revert(client, 1)
    with CaptureQueriesContext(connection) as few:
        page = client.get(f"{BASE}/history?limit=2").json()
    assert len(page["data"]) == 2 and page["next_cursor"]
    with CaptureQueriesContext(connection) as many:
        client.get(f"{BASE}/history?limit=100").json()
    assert len(many) == len(few)
    seen, cursor = [], None
    while True:
        url = f"{BASE}/persona-versions?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(url).json()
        seen += [v["version"] for v in page["data"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [7, 6, 5, 4, 3, 2, 1]
    with CaptureQueriesContext(connection) as few:
        client.get(f"{BASE}/persona-versions?limit=1")
    with CaptureQueriesContext(connection) as many:
        client.get(f"{BASE}/persona-versions?limit=100")
    assert len(many) == len(few)
    assert HistoryEntry.objects.count() == 2 + 6


def test_other_widgets_tokens_see_nothing(api, other_widget, versioned):
    stranger = api(["ai:read", "ai:apply"], w=other_widget)
    assert stranger.get(f"{BASE}/persona-versions").json()["data"] == []
    assert_problem(stranger.get(f"{BASE}/persona-versions/1"), 404, "not_found")
    assert_problem(stranger.post(f"{BASE}/persona-versions/1/revert", {}, format="json", **idem()), 404, "not_found")
    assert stranger.get(f"{BASE}/history").json()["data"] == []
    assert stranger.get(f"{BASE}/cycles").json()["data"] == []


def test_credential_of_the_selected_assistant_is_used(
    client, widget, llm_fake, switch_on, django_capture_on_commit_callbacks
):
    own = llm_fake("openai", text=json.dumps(PROPOSAL))
    wide = llm_fake("openai", text="not json")
    assistant = AssistantFactory(widget=widget, is_default=True, persona=PERSONA, system_prompt=PROMPT)
    CredentialFactory(widget=widget, api_key=wide.api_key, base_url=wide.base_url)
    CredentialFactory(widget=widget, assistant=assistant, api_key=own.api_key, base_url=own.base_url)
    make_evidence(widget, AiOperatorFactory(assistant=assistant))
    run_tune(client, django_capture_on_commit_callbacks)
    assert TuningCycle.objects.get().status == "applied"
    assert own.api_requests and not wide.api_requests


def test_an_assistant_id_past_any_row_is_unknown_not_the_default(client, assistant):
    huge = "9" * 30
    assert_problem(client.get(f"{BASE}/kill-switch?assistant_id={huge}"), 422)
    assert_problem(client.get(f"{BASE}/history?assistant_id={huge}"), 404, "not_found")
    assert_problem(client.get(f"/api/v1/wishes?assistant_id={huge}"), 422)
    assert_problem(revert(client, 1, {"assistant_id": 2**63}), 422)


def test_tune_takes_an_empty_json_object_as_no_body(client, assistant, ready):
    r = client.post(f"{BASE}/tune", "{}", content_type="application/json", **idem())
    assert r.status_code == 202, r.content
    assert r.json()["status"] == "queued"


def test_tune_refuses_a_json_body_that_is_not_an_empty_object(client, assistant, ready):
    for body in ("[]", '{"x": 1}', "null", "{}{}"):
        problem = assert_problem(client.post(f"{BASE}/tune", body, content_type="application/json", **idem()), 422)
        assert problem["errors"] == {"body": ["This operation takes no body."]}
    assert not TuningCycle.objects.exists()

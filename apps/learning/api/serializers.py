"""Inputs (strict: unknown members and parameters are 422) and documentation shapes of the
self-learning and improvement-wish API."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import InputSerializer, StrictCharField, StrictIntegerField

from ..models import HistoryEntry, PersonaVersion, TuningCycle, Wish
from ..selectors import MAX_PROBATION_HOURS, PROBATION_HOURS

MAX_ID = 2**63 - 1
ASSISTANT_HELP = "The assistant learning follows (one of the widget's); default: the effective assistant."


# --- inputs -----------------------------------------------------------------------------------------------


class EmptyQuery(InputSerializer):
    """No parameters."""


class AssistantQuery(InputSerializer):
    assistant_id = IdQueryField(required=False, help_text=ASSISTANT_HELP)


class WishListQuery(InputSerializer):
    assistant_id = IdQueryField(required=False, help_text="Only this assistant's wishes.")
    status = serializers.ChoiceField(
        required=False, choices=Wish.Status.choices, help_text="Only wishes in this status."
    )


class RevertInput(InputSerializer):
    assistant_id = StrictIntegerField(required=False, min_value=1, max_value=MAX_ID, help_text=ASSISTANT_HELP)
    restore = serializers.ChoiceField(
        required=False,
        default="snapshot",
        choices=["snapshot", "previous"],
        help_text="`snapshot` (default): the pair the version made; `previous`: the pair it replaced (so the "
        "state before the first version can be restored).",
    )


class PlainTextField(StrictCharField):
    """Text a person wrote: a JSON string, not blank, no NUL."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        return value


class WishInput(InputSerializer):
    text = PlainTextField(min_length=1, max_length=2000, help_text="What the assistant should do better.")
    assistant_id = StrictIntegerField(required=False, min_value=1, max_value=MAX_ID, help_text=ASSISTANT_HELP)


class ApproveInput(InputSerializer):
    probation_hours = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_PROBATION_HOURS,
        default=PROBATION_HOURS,
        help_text=f"Length of the probation window, 1 to {MAX_PROBATION_HOURS} hours (default {PROBATION_HOURS}).",
    )
    note = PlainTextField(required=False, max_length=500, allow_blank=True, help_text="Kept in the decision trail.")


# --- documentation shapes ---------------------------------------------------------------------------------


class EvidenceDoc(serializers.Serializer):
    escalations = serializers.IntegerField()
    low_ratings = serializers.IntegerField()
    unanswered = serializers.IntegerField()
    total = serializers.IntegerField()


class GateDoc(serializers.Serializer):
    name = serializers.ChoiceField(choices=["master_switch", "evidence", "probation"])
    open = serializers.BooleanField()
    reason = serializers.CharField(
        allow_null=True,
        help_text="Why closed: `autonomous_tuning_disabled`, `not_enough_evidence`, `no_assistant`, "
        "`probation_in_progress`; null when open.",
    )
    new_evidence = EvidenceDoc(required=False, allow_null=True, help_text="evidence gate only")
    required = serializers.IntegerField(required=False, help_text="evidence gate only")
    since = serializers.DateTimeField(required=False, allow_null=True, help_text="evidence gate only")
    version = serializers.IntegerField(required=False, allow_null=True, help_text="probation gate only")
    until = serializers.DateTimeField(required=False, allow_null=True, help_text="probation gate only")


class KillSwitchDoc(serializers.Serializer):
    assistant_id = serializers.IntegerField(allow_null=True)
    may_run = serializers.BooleanField(help_text="True when every gate is open.")
    gates = GateDoc(many=True)


class PolicyDoc(serializers.Serializer):
    min_new_evidence = serializers.IntegerField()
    evidence_window_days = serializers.IntegerField()
    low_rating_max = serializers.IntegerField()
    probation_hours = serializers.IntegerField()
    schedule = serializers.CharField()


class ProbationDoc(serializers.Serializer):
    version = serializers.IntegerField()
    source = serializers.ChoiceField(choices=PersonaVersion.Source.choices)
    started_at = serializers.DateTimeField()
    until = serializers.DateTimeField()
    evidence_since_start = EvidenceDoc()
    evidence_before_start = EvidenceDoc(help_text="The same length of time before the change.")


class ProposalDoc(serializers.Serializer):
    persona = serializers.CharField()
    system_prompt = serializers.CharField()
    rationale = serializers.CharField()


class WindowDoc(serializers.Serializer):
    # "from" is a keyword: declared through get_fields.
    def get_fields(self):
        return {"from": serializers.DateTimeField(), "to": serializers.DateTimeField()}


class CycleDoc(serializers.Serializer):
    id = serializers.IntegerField()
    assistant_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=TuningCycle.Status.choices)
    trigger = serializers.ChoiceField(choices=TuningCycle.Trigger.choices)
    evidence_window = WindowDoc()
    evidence = EvidenceDoc()
    proposal = ProposalDoc(
        allow_null=True,
        help_text="Set once the provider answered (applied, no_change, or held: the proposal adds links, codes, "
        "contact details or sentences, so it waits for the owner as a wish in `proposed`).",
    )
    persona_version = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(
        allow_null=True,
        help_text="Why it failed: `provider_<kind>`, `invalid_proposal`, `credential_missing`, `persona_changed`, "
        "`lost`.",
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ControlPanelTargetDoc(serializers.Serializer):
    """The assistant the panel reports on: the same shape as `learning_target` of GET /v1/ai/settings."""

    assistant_id = serializers.IntegerField()
    name = serializers.CharField()


class ControlPanelDoc(serializers.Serializer):
    autonomous_tuning_enabled = serializers.BooleanField()
    learning_target = ControlPanelTargetDoc(allow_null=True)
    policy = PolicyDoc()
    kill_switch = KillSwitchDoc()
    current_version = serializers.IntegerField(allow_null=True)
    live_matches_current_version = serializers.BooleanField()
    probation = ProbationDoc(allow_null=True)
    last_cycle = CycleDoc(allow_null=True)
    cycle_in_progress = serializers.IntegerField(allow_null=True)
    pending_wishes = serializers.IntegerField()


class PairDoc(serializers.Serializer):
    persona = serializers.CharField()
    system_prompt = serializers.CharField()


class VersionProbationDoc(serializers.Serializer):
    until = serializers.DateTimeField()
    state = serializers.ChoiceField(choices=["running", "completed", "superseded", "reverted"])
    ended_at = serializers.DateTimeField(allow_null=True)


class VersionDoc(serializers.Serializer):
    version = serializers.IntegerField()
    assistant_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    source = serializers.ChoiceField(choices=PersonaVersion.Source.choices)
    persona = serializers.CharField()
    system_prompt = serializers.CharField()
    previous = PairDoc(help_text="The pair this version replaced.")
    reverted_to = serializers.IntegerField(allow_null=True)
    restored = serializers.ChoiceField(choices=["snapshot", "previous"], allow_null=True)
    probation = VersionProbationDoc(allow_null=True)


class ActorDoc(serializers.Serializer):
    type = serializers.ChoiceField(choices=["token", "system"])
    token_id = serializers.IntegerField(required=False)


class HistoryDoc(serializers.Serializer):
    id = serializers.IntegerField()
    assistant_id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=HistoryEntry.Kind.choices)
    version = serializers.IntegerField(allow_null=True)
    cycle_id = serializers.IntegerField(allow_null=True)
    wish_id = serializers.IntegerField(allow_null=True)
    actor = ActorDoc()
    detail = serializers.JSONField()
    created_at = serializers.DateTimeField()


class TrailDoc(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=["submitted", "proposed", "proposal_failed", "approved", "rejected", "reverted"]
    )
    at = serializers.DateTimeField()
    actor = ActorDoc()
    note = serializers.CharField(allow_null=True)
    detail = serializers.JSONField()


class WishDoc(serializers.Serializer):
    id = serializers.IntegerField()
    assistant_id = serializers.IntegerField()
    text = serializers.CharField()
    status = serializers.ChoiceField(choices=Wish.Status.choices)
    proposal_pending = serializers.BooleanField()
    proposal_error = serializers.CharField(allow_null=True)
    applied_version = serializers.IntegerField(allow_null=True)
    revert_version = serializers.IntegerField(allow_null=True)
    probation_until = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class WishDetailDoc(WishDoc):
    decision_trail = TrailDoc(many=True)


class ChangesDoc(serializers.Serializer):
    persona = serializers.BooleanField()
    system_prompt = serializers.BooleanField()


class PreviewDoc(serializers.Serializer):
    wish_id = serializers.IntegerField()
    assistant_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Wish.Status.choices)
    proposal_pending = serializers.BooleanField()
    current = PairDoc()
    proposed = ProposalDoc(allow_null=True)
    changes = ChangesDoc()
    stale = serializers.BooleanField(help_text="The live pair changed since the proposal was made.")
    approvable = serializers.BooleanField()

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
    escalations = serializers.IntegerField(help_text="Chats handed to people.")
    low_ratings = serializers.IntegerField(help_text="Ratings of 1 or 2.")
    unanswered = serializers.IntegerField(help_text="Questions the assistant could not answer.")
    total = serializers.IntegerField(help_text="All evidence items.")


class GateDoc(serializers.Serializer):
    name = serializers.ChoiceField(
        choices=["master_switch", "evidence", "probation"], help_text="`master_switch`, `evidence` or `probation`."
    )
    open = serializers.BooleanField(help_text="True when the gate lets a cycle run.")
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
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text="The assistant the gates are for; null when none."
    )
    may_run = serializers.BooleanField(help_text="True when every gate is open.")
    gates = GateDoc(many=True, help_text="The three gates, in order.")


class PolicyDoc(serializers.Serializer):
    min_new_evidence = serializers.IntegerField(
        help_text="Evidence items needed since the last change before a cycle may run."
    )
    evidence_window_days = serializers.IntegerField(help_text="How many days back a cycle looks at most.")
    low_rating_max = serializers.IntegerField(help_text="The highest rating that counts as low.")
    probation_hours = serializers.IntegerField(help_text="The default probation of an applied change, in hours.")
    schedule = serializers.CharField(help_text="When scheduled cycles run: `daily`.")


class ProbationDoc(serializers.Serializer):
    version = serializers.IntegerField(help_text="The persona version on probation.")
    source = serializers.ChoiceField(
        choices=PersonaVersion.Source.choices, help_text="How that version was made: `tune`, `wish` or `revert`."
    )
    started_at = serializers.DateTimeField(help_text="When the probation started.")
    until = serializers.DateTimeField(help_text="When the probation ends.")
    evidence_since_start = EvidenceDoc(help_text="Evidence since the change.")
    evidence_before_start = EvidenceDoc(help_text="The same length of time before the change.")


class ProposalDoc(serializers.Serializer):
    persona = serializers.CharField(help_text="The proposed persona.")
    system_prompt = serializers.CharField(help_text="The proposed system prompt.")
    rationale = serializers.CharField(help_text="The provider's reasons for the proposal.")


class WindowDoc(serializers.Serializer):
    # "from" is a keyword: declared through get_fields.
    def get_fields(self):
        return {
            "from": serializers.DateTimeField(help_text="The start of the window."),
            "to": serializers.DateTimeField(help_text="The end of the window."),
        }


class CycleDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The cycle's id.")
    assistant_id = serializers.IntegerField(help_text="The tuned assistant.")
    status = serializers.ChoiceField(choices=TuningCycle.Status.choices, help_text="The cycle's status.")
    trigger = serializers.ChoiceField(
        choices=TuningCycle.Trigger.choices,
        help_text="`manual` (`POST /ai/learning/tune`) or `scheduled` (the daily job).",
    )
    evidence_window = WindowDoc(help_text="The time range the evidence came from.")
    evidence = EvidenceDoc(help_text="The evidence the cycle used.")
    proposal = ProposalDoc(
        allow_null=True,
        help_text="Set once the provider answered (applied, no_change, or held: the proposal adds links, codes, "
        "contact details or sentences, so it waits for the owner as a wish in `proposed`).",
    )
    persona_version = serializers.IntegerField(
        allow_null=True, help_text="The persona version the cycle made; null when it made none."
    )
    error = serializers.CharField(
        allow_null=True,
        help_text="Why it failed: `provider_<kind>`, `invalid_proposal`, `credential_missing`, `persona_changed`, "
        "`lost`.",
    )
    created_at = serializers.DateTimeField(help_text="When the cycle was queued.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When the cycle started; null while queued.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When the cycle ended; null until then.")


class ControlPanelTargetDoc(serializers.Serializer):
    """The assistant the panel reports on: the same shape as `learning_target` of GET /v1/ai/settings."""

    assistant_id = serializers.IntegerField(help_text="The assistant's id.")
    name = serializers.CharField(help_text="The assistant's name.")


class ControlPanelDoc(serializers.Serializer):
    autonomous_tuning_enabled = serializers.BooleanField(
        help_text="The master switch of tuning cycles (changed with `PATCH /ai/settings`)."
    )
    learning_target = ControlPanelTargetDoc(
        allow_null=True, help_text="The assistant the panel reports on; null when none."
    )
    policy = PolicyDoc(help_text="The tuning policy's fixed values.")
    kill_switch = KillSwitchDoc(help_text="The gates that decide whether a cycle may run.")
    current_version = serializers.IntegerField(
        allow_null=True, help_text="The assistant's latest persona version; null before the first."
    )
    live_matches_current_version = serializers.BooleanField(
        help_text="True when the live persona and system prompt are the latest version's."
    )
    probation = ProbationDoc(allow_null=True, help_text="The change on probation now; null when none.")
    last_cycle = CycleDoc(allow_null=True, help_text="The latest cycle; null before the first.")
    cycle_in_progress = serializers.IntegerField(
        allow_null=True, help_text="The id of a cycle running now; null when none."
    )
    pending_wishes = serializers.IntegerField(help_text="How many wishes wait for a decision.")


class PairDoc(serializers.Serializer):
    persona = serializers.CharField(help_text="The persona.")
    system_prompt = serializers.CharField(help_text="The system prompt.")


class VersionProbationDoc(serializers.Serializer):
    until = serializers.DateTimeField(help_text="When the probation ends.")
    state = serializers.ChoiceField(
        choices=["running", "completed", "superseded", "reverted"],
        help_text="`running`, `completed`, `superseded` or `reverted`.",
    )
    ended_at = serializers.DateTimeField(allow_null=True, help_text="When the probation ended; null while running.")


class VersionDoc(serializers.Serializer):
    version = serializers.IntegerField(help_text="The version's number, counted up per assistant.")
    assistant_id = serializers.IntegerField(help_text="The assistant.")
    created_at = serializers.DateTimeField(help_text="When the version was made.")
    source = serializers.ChoiceField(
        choices=PersonaVersion.Source.choices, help_text="`tune`, `wish` or `revert`: what made it."
    )
    persona = serializers.CharField(help_text="The persona as this version made it.")
    system_prompt = serializers.CharField(help_text="The system prompt as this version made it.")
    previous = PairDoc(help_text="The pair this version replaced.")
    reverted_to = serializers.IntegerField(
        allow_null=True, help_text="For a revert: the version it went back to; null otherwise."
    )
    restored = serializers.ChoiceField(
        choices=["snapshot", "previous"],
        allow_null=True,
        help_text="For a revert: `snapshot` or `previous`; null otherwise.",
    )
    probation = VersionProbationDoc(allow_null=True, help_text="The version's probation; null when it had none.")


class ActorDoc(serializers.Serializer):
    type = serializers.ChoiceField(choices=["token", "system"], help_text="`token` or `system`.")
    token_id = serializers.IntegerField(required=False, help_text="The API token's id, when `type` is `token`.")


class HistoryDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The entry's id.")
    assistant_id = serializers.IntegerField(help_text="The assistant.")
    kind = serializers.ChoiceField(choices=HistoryEntry.Kind.choices, help_text="What happened.")
    version = serializers.IntegerField(allow_null=True, help_text="The persona version concerned; null when none.")
    cycle_id = serializers.IntegerField(allow_null=True, help_text="The tuning cycle concerned; null when none.")
    wish_id = serializers.IntegerField(allow_null=True, help_text="The wish concerned; null when none.")
    actor = ActorDoc(help_text="Who did it.")
    detail = serializers.JSONField(help_text="Details, by name.")
    created_at = serializers.DateTimeField(help_text="When it happened.")


class TrailDoc(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=["submitted", "proposed", "proposal_failed", "approved", "rejected", "reverted"],
        help_text="What happened to the wish.",
    )
    at = serializers.DateTimeField(help_text="When.")
    actor = ActorDoc(help_text="Who did it.")
    note = serializers.CharField(allow_null=True, help_text="The note given; null when none.")
    detail = serializers.JSONField(help_text="Details, by name.")


class WishDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The wish's id.")
    assistant_id = serializers.IntegerField(help_text="The assistant the wish is for.")
    text = serializers.CharField(help_text="What the assistant should do better.")
    status = serializers.ChoiceField(choices=Wish.Status.choices, help_text="The wish's status.")
    proposal_pending = serializers.BooleanField(help_text="True while the provider's rewrite is being made.")
    proposal_error = serializers.CharField(allow_null=True, help_text="Why the proposal failed; null otherwise.")
    applied_version = serializers.IntegerField(
        allow_null=True, help_text="The persona version approval made; null until approved."
    )
    revert_version = serializers.IntegerField(
        allow_null=True, help_text="The persona version a revert made; null unless reverted."
    )
    probation_until = serializers.DateTimeField(
        allow_null=True, help_text="When the applied change's probation ends; null when none."
    )
    created_at = serializers.DateTimeField(help_text="When the wish was submitted.")
    updated_at = serializers.DateTimeField(help_text="When the wish last changed.")


class WishDetailDoc(WishDoc):
    decision_trail = TrailDoc(many=True, help_text="Everything that happened to the wish, oldest first.")


class ChangesDoc(serializers.Serializer):
    persona = serializers.BooleanField(help_text="True when the proposal changes the persona.")
    system_prompt = serializers.BooleanField(help_text="True when the proposal changes the system prompt.")


class PreviewDoc(serializers.Serializer):
    wish_id = serializers.IntegerField(help_text="The wish's id.")
    assistant_id = serializers.IntegerField(help_text="The assistant.")
    status = serializers.ChoiceField(choices=Wish.Status.choices, help_text="The wish's status.")
    proposal_pending = serializers.BooleanField(help_text="True while the provider's rewrite is being made.")
    current = PairDoc(help_text="The live persona and system prompt.")
    proposed = ProposalDoc(allow_null=True, help_text="The stored proposal; null before it exists.")
    changes = ChangesDoc(help_text="Which of the pair the proposal changes.")
    stale = serializers.BooleanField(help_text="The live pair changed since the proposal was made.")
    approvable = serializers.BooleanField(help_text="True when the wish can be approved now.")

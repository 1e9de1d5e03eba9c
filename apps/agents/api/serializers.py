"""Agents, invitations, the agent event log and departments: output builders, the `...Doc`
serializers describing the same shapes for OpenAPI (a test keeps the two in step), and the strict
`XInput` / `XQuery` serializers."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.api.query import (
    IdQueryField,
    query_data,  # noqa: F401 (used by the views as s.query_data)
)
from apps.core.api.serializers import (
    InputSerializer,
    LabelMixin,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
    StrictIntegerField,
    UploadField,
)

from .. import events_log, selectors
from ..models import Agent, AgentEvent, Department, Invitation
from ..services import DAYS, full_week

AVATAR_MAX_BYTES = 2048 * 1024
AVATAR_EXTENSIONS = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png", "gif": "gif", "webp": "webp"}
# Stored file extension per detected kind.
AVATAR_STORED_EXTENSION = {"jpeg": "jpg", "png": "png", "gif": "gif", "webp": "webp"}
AVATAR_CONTENT_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
CHANNELS = ("tg", "vk", "wa", "vb", "fb", "ok", "smb")
AD_CABINET_PREFIX = "av__"
UNKNOWN_ID = "Unknown id."
INVITATION_STATES = ["pending", "accepted", "revoked", "expired"]

_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_CABINET_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# --- output builders -------------------------------------------------------------------------------------


def _iso(value):
    return value.isoformat() if value is not None else None


def file_url(field_file, absolute: Callable[[str], str] | None = None) -> str | None:
    """The public URL of a stored image; a storage's relative URL is made absolute with `absolute`
    (the request's `build_absolute_uri`)."""
    if not field_file:
        return None
    url = field_file.url
    return absolute(url) if absolute is not None and url.startswith("/") else url


def agent_payload(agent: Agent, *, online_ids: set[int], absolute: Callable[[str], str] | None = None) -> dict:
    """`departments` needs the agent's departments prefetched (selectors.with_department_ids)."""
    return {
        "id": agent.pk,
        "user_id": agent.user_id,
        "name": agent.name,
        "surname": agent.surname,
        "email": agent.email,
        "avatar_url": file_url(agent.avatar, absolute),
        "role": agent.role,
        "type": agent.type,
        "status": agent.status,
        "online": agent.pk in online_ids,
        "show_in_header": agent.show_in_header,
        "capacity": agent.capacity,
        "ai_assistant_id": agent.ai_assistant_id,
        "departments": sorted(d.pk for d in agent.departments.all()),
        "created_at": _iso(agent.created_at),
    }


def invitation_payload(invitation: Invitation, *, now=None) -> dict:
    return {
        "id": invitation.pk,
        "email": invitation.email,
        "status": invitation.state(now),
        "agent_id": invitation.agent_id,
        "created_at": _iso(invitation.created_at),
        "expires_at": _iso(invitation.expires_at),
        "accepted_at": _iso(invitation.accepted_at),
        "revoked_at": _iso(invitation.revoked_at),
    }


def event_payload(event: AgentEvent) -> dict:
    return {
        "type": events_log.slug_of(event.type_code),
        "type_code": event.type_code,
        "message": events_log.message_of(event.type_code, event.extra),
        "created_at": _iso(event.created_at),
    }


def department_payload(department: Department, *, absolute: Callable[[str], str] | None = None) -> dict:
    """`agent_ids` needs the department's agents prefetched (selectors.department_list)."""
    return {
        "id": department.pk,
        "name": department.name,
        "channels": list(department.channels),
        "agent_ids": sorted(a.pk for a in department.agents.all()),
        "schedule": full_week(department.schedule),
        "avatar_url": file_url(department.avatar, absolute),
        "created_at": _iso(department.created_at),
        "updated_at": _iso(department.updated_at),
    }


# --- documentation of output shapes ---------------------------------------------------------------------


class AgentDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The agent's id.")
    user_id = serializers.IntegerField(
        allow_null=True, help_text="The id of the agent's user account; null when it has none."
    )
    name = serializers.CharField(help_text="Full display name.")
    surname = serializers.CharField(allow_blank=True, help_text="The surname; empty when none is set.")
    email = serializers.CharField(allow_blank=True, help_text="The agent's e-mail address; empty when none is set.")
    avatar_url = serializers.CharField(allow_null=True, help_text="The avatar's URL; null without an avatar.")
    role = serializers.ChoiceField(
        choices=Agent.Role.values, help_text="The seat role, `owner` or `operator`; not writable."
    )
    type = serializers.ChoiceField(
        choices=Agent.Type.values, help_text="`human`, `ai` (the AI operator) or `webhook` (an external operator)."
    )
    status = serializers.ChoiceField(
        choices=Agent.Status.values,
        help_text=(
            "`active`, `relaxation` or `banned`; the default list leaves banned agents out, a single read does not."
        ),
    )
    online = serializers.BooleanField(help_text="Live websocket presence, not the stored status.")
    show_in_header = serializers.BooleanField(help_text="True when the widget header shows this agent; writable.")
    capacity = serializers.IntegerField(
        allow_null=True,
        help_text="Open chats routing gives this operator at most (1..50); null: the routing settings' "
        "`default_capacity`. Writable.",
    )
    ai_assistant_id = serializers.IntegerField(
        allow_null=True, help_text="The assistant an AI operator answers with; null for other agents. Not writable."
    )
    departments = serializers.ListField(child=serializers.IntegerField(), help_text="Department ids.")
    created_at = serializers.DateTimeField(help_text="When the agent was created.")


class AvatarDoc(serializers.Serializer):
    avatar_url = serializers.CharField(help_text="The new avatar's URL.")


class AgentEventDoc(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=list(events_log.SLUGS), help_text="Stable slug (the contract); `unknown` for actions with no slug."
    )
    type_code = serializers.IntegerField(help_text="Raw internal code.")
    message = serializers.CharField(help_text="Russian console string; not a contract, do not parse.")
    created_at = serializers.DateTimeField(help_text="When the action happened.")


class InvitationDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The invitation's id.")
    email = serializers.CharField(help_text="The invited e-mail address.")
    status = serializers.ChoiceField(
        choices=INVITATION_STATES, help_text="`pending`, `accepted`, `revoked` or `expired`."
    )
    agent_id = serializers.IntegerField(allow_null=True, help_text="The agent the accepted invitation made.")
    created_at = serializers.DateTimeField(help_text="When the invitation was sent.")
    expires_at = serializers.DateTimeField(help_text="7 days after creation.")
    accepted_at = serializers.DateTimeField(allow_null=True, help_text="When the recipient accepted; null until then.")
    revoked_at = serializers.DateTimeField(
        allow_null=True, help_text="When the invitation was revoked; null unless revoked."
    )


# Written out in full: a "$ref" to a serializer that no view names is never registered as a component.
HHMM_PATTERN = "^[0-2][0-9]:[0-5][0-9]$"
DAY_HOURS_SCHEMA = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "pattern": HHMM_PATTERN, "description": "HH:MM, strictly earlier than `to`."},
        "to": {"type": "string", "pattern": HHMM_PATTERN, "description": "HH:MM; overnight ranges are not supported."},
    },
    "required": ["from", "to"],
    "additionalProperties": False,
    "description": "Open from `from` to `to`.",
}

DAY_SCHEMA = {
    "oneOf": [
        {"type": "string", "const": "full", "description": "Open all day."},
        DAY_HOURS_SCHEMA,
        {"type": "null", "description": "Closed."},
    ]
}


@extend_schema_field(DAY_SCHEMA)
class DayField(serializers.JSONField):
    pass


class WeekDoc(serializers.Serializer):
    """All seven days, Monday to Sunday."""

    def get_fields(self):
        return {day: DayField(help_text=f"{day}: `full`, `{{from, to}}`, or null (closed).") for day in DAYS}


class DepartmentDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The department's id.")
    name = serializers.CharField(help_text="The department's name.")
    channels = serializers.ListField(
        child=serializers.CharField(),
        help_text=(
            "Channel codes routed to it: `tg`, `vk`, `wa`, `vb`, `fb`, `ok`, `smb` (the on-site widget) or "
            "`av__<cabinet_id>`."
        ),
    )
    agent_ids = serializers.ListField(child=serializers.IntegerField(), help_text="The ids of its agents.")
    schedule = WeekDoc(
        help_text="Opening hours, always seven days Monday to Sunday: `full`, `{from, to}`, or null (closed)."
    )
    avatar_url = serializers.CharField(allow_null=True, help_text="The avatar's URL; null without an avatar.")
    created_at = serializers.DateTimeField(help_text="When the department was created.")
    updated_at = serializers.DateTimeField(help_text="When the department was last changed.")


class PartialWeekDoc(serializers.Serializer):
    """Any of the seven days; an omitted day is closed."""

    def get_fields(self):
        return {
            day: DayField(
                required=False, help_text=f"{day}: `full`, `{{from, to}}`, or null (closed); omitted: closed."
            )
            for day in DAYS
        }


# --- shared fields ------------------------------------------------------------------------------------


class AgentIdsField(serializers.ListField):
    """A list of agent ids of the request's widget. Unknown and foreign ids answer identically
    (422 `Unknown id.` at `<field>.<index>`); a repeated id is refused."""

    child = StrictIntegerField()

    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        errors: dict[int, list[str]] = {}
        seen: set[int] = set()
        for index, value in enumerate(data):
            if isinstance(value, bool) or not isinstance(value, int):
                errors[index] = ["Must be an integer id."]
            elif value in seen:
                errors[index] = ["Duplicate id."]
            else:
                seen.add(value)
        if errors:
            raise serializers.ValidationError(errors)
        found = selectors.agents_of(self.context["request"].widget, data)
        errors = {i: [UNKNOWN_ID] for i, value in enumerate(data) if value not in found}
        if errors:
            raise serializers.ValidationError(errors)
        return [found[value] for value in data]


class ChannelsField(serializers.ListField):
    """The closed channel vocabulary: tg, vk, wa, vb, fb, ok, smb, or av__<cabinet_id> of one of
    this widget's ad cabinets. An `av__` channel naming no cabinet of this widget reports exactly as
    an unknown agent id does (`Unknown id.`)."""

    child = StrictCharField()

    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list", input_type=type(data).__name__)
        cabinets = None
        errors: dict[int, list[str]] = {}
        seen: set[str] = set()
        for index, value in enumerate(data):
            if not isinstance(value, str):
                errors[index] = ["Must be a string."]
                continue
            if value in seen:
                errors[index] = ["Duplicate channel."]
                continue
            seen.add(value)
            if value in CHANNELS:
                continue
            cabinet_id = value.removeprefix(AD_CABINET_PREFIX)
            if value.startswith(AD_CABINET_PREFIX) and _CABINET_ID.match(cabinet_id):
                if cabinets is None:
                    cabinets = {str(c) for c in selectors.ad_cabinet_ids(self.context["request"].widget)}
                if cabinet_id not in cabinets:
                    errors[index] = [UNKNOWN_ID]
                continue
            errors[index] = [f"Unknown channel; use one of {', '.join(CHANNELS)} or av__<cabinet_id>."]
        if errors:
            raise serializers.ValidationError(errors)
        return list(data)


def _day(value, path_errors: dict, day: str):
    if value is None or value == "full":
        return value
    if not isinstance(value, Mapping):
        path_errors[day] = ['Must be "full", an object {from, to} or null.']
        return None
    errors = {}
    for key in value:
        if key not in ("from", "to"):
            errors[key] = ["Unknown field."]
    for key in ("from", "to"):
        item = value.get(key)
        if key not in value:
            errors[key] = ["This field is required."]
        elif not isinstance(item, str) or not _HHMM.match(item):
            errors[key] = ["Must be a time HH:MM (00:00 to 23:59)."]
    if not errors and value["from"] >= value["to"]:
        errors["to"] = ["Must be later than `from`; overnight ranges are not supported."]
    if errors:
        path_errors[day] = errors
        return None
    return {"from": value["from"], "to": value["to"]}


@extend_schema_field(PartialWeekDoc)
class ScheduleField(serializers.Field):
    """{<DayName>: "full" | {from, to} | null}, day names Monday to Sunday; an omitted day is
    closed. Returns the sent days only (services.full_week fills the rest)."""

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError("Must be an object keyed by day name (Monday to Sunday).")
        errors: dict = {}
        week = {}
        for day, value in data.items():
            if day not in DAYS:
                errors[day] = ["Unknown day; use Monday to Sunday."]
                continue
            week[day] = _day(value, errors, day)
        if errors:
            raise serializers.ValidationError(errors)
        return week

    def to_representation(self, value):
        return value


class NameField(LabelMixin, StrictCharField):
    """A department name: NFC, no invisible or bidirectional-control characters."""

    def __init__(self, **kwargs):
        super().__init__(max_length=200, allow_blank=False, trim_whitespace=True, **kwargs)


# --- queries --------------------------------------------------------------------------------------------


class AgentListQuery(InputSerializer):
    online = serializers.ChoiceField(
        choices=["0", "1"], required=False, help_text="Live presence: 1 online, 0 offline."
    )
    type = serializers.ChoiceField(
        choices=Agent.Type.values, required=False, help_text="Only agents of this type: human, ai or webhook."
    )
    department_id = IdQueryField(required=False, help_text="A missing or foreign department is 404.")
    status = serializers.ChoiceField(
        choices=Agent.Status.values, required=False, help_text="Without it, banned agents are left out."
    )


class AgentEventQuery(InputSerializer):
    type = serializers.ChoiceField(choices=list(events_log.SLUGS), required=False, help_text="A slug, or `unknown`.")


# --- inputs ------------------------------------------------------------------------------------------------


class EmptyInput(InputSerializer):
    """No body members are accepted."""


class AgentPatchInput(InputSerializer):
    """`show_in_header` and `capacity` are the writable members (at least one); every other agent
    member is refused by name."""

    show_in_header = StrictBooleanField(required=False, help_text="True to show this agent in the widget header.")
    capacity = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=50,
        help_text="1..50 open chats routing gives this operator at most; null: the widget's default.",
    )
    id = serializers.CharField(read_only=True)
    user_id = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    surname = serializers.CharField(read_only=True)
    email = serializers.CharField(read_only=True)
    avatar_url = serializers.CharField(read_only=True)
    role = serializers.CharField(read_only=True)
    type = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)
    online = serializers.CharField(read_only=True)
    ai_assistant_id = serializers.CharField(read_only=True)
    departments = serializers.CharField(read_only=True)
    created_at = serializers.CharField(read_only=True)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"show_in_header": ["Send `show_in_header`, `capacity` or both."]})
        return attrs


def sniff_image(head: bytes) -> str | None:
    """The image kind from its magic bytes, or None."""
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


class AvatarInput(InputSerializer):
    """Multipart `file`: jpeg, jpg, png, gif or webp, at most 2048 KB. The name's extension and
    the content's magic bytes must both say the same allowed type."""

    file = serializers.FileField(allow_empty_file=False)

    def validate_file(self, upload):
        if upload.size > AVATAR_MAX_BYTES:
            raise serializers.ValidationError(f"The file exceeds 2048 KB ({AVATAR_MAX_BYTES} bytes).")
        _, dot, ext = (upload.name or "").rpartition(".")
        claimed = AVATAR_EXTENSIONS.get(ext.lower()) if dot else None
        if claimed is None:
            raise serializers.ValidationError("The file name must end in .jpeg, .jpg, .png, .gif or .webp.")
        upload.seek(0)
        content = upload.read()
        kind = sniff_image(content[:16])
        if kind is None:
            raise serializers.ValidationError("The content is not a JPEG, PNG, GIF or WebP image.")
        if kind != claimed:
            raise serializers.ValidationError(f"The content is {kind.upper()} but the name says .{ext.lower()}.")
        return {"content": content, "extension": AVATAR_STORED_EXTENSION[kind]}


class AvatarMultipartDoc(serializers.Serializer):
    file = UploadField(
        content_types=AVATAR_CONTENT_TYPES,
        help_text="jpeg, jpg, png, gif or webp, at most 2048 KB (checked by content).",
    )


class InvitationInput(InputSerializer):
    email = StrictEmailField(
        max_length=254,
        help_text="The e-mail address to invite; the invitation makes a new human operator once followed.",
    )

    def validate_email(self, value: str) -> str:
        value = value.strip().lower()
        if selectors.is_operator(self.context["request"].widget, value):
            raise serializers.ValidationError("This e-mail already belongs to an operator of this widget.")
        return value


_DEPARTMENT_READ_ONLY = ("id", "avatar_url", "created_at", "updated_at")


class DepartmentInput(InputSerializer):
    name = NameField(help_text="The department's name, up to 200 characters.")
    channels = ChannelsField(
        required=False,
        help_text=(
            "Channel codes: `tg`, `vk`, `wa`, `vb`, `fb`, `ok`, `smb`, or `av__<cabinet_id>` of one of this widget's "
            "ad cabinets."
        ),
    )
    agent_ids = AgentIdsField(required=False, help_text="Agent ids of this widget; an unknown or foreign id is 422.")
    schedule = ScheduleField(
        required=False,
        help_text=(
            "Opening hours keyed by day name (Monday to Sunday): `full`, `{from, to}` or null; an omitted day is "
            "closed."
        ),
    )
    id = serializers.CharField(read_only=True)
    avatar_url = serializers.CharField(read_only=True)
    created_at = serializers.CharField(read_only=True)
    updated_at = serializers.CharField(read_only=True)


class DepartmentPatchInput(InputSerializer):
    """`{name?, channels?}`; `agent_ids` and `schedule` have their own PUT routes and are refused."""

    NOT_HERE = {
        "agent_ids": "Not writable by PATCH; use PUT /v1/departments/{id}/agents.",
        "schedule": "Not writable by PATCH; use PUT /v1/departments/{id}/schedule.",
    }

    name = NameField(required=False, help_text="The department's name, up to 200 characters.")
    channels = ChannelsField(
        required=False,
        help_text=(
            "Channel codes: `tg`, `vk`, `wa`, `vb`, `fb`, `ok`, `smb`, or `av__<cabinet_id>` of one of this widget's "
            "ad cabinets."
        ),
    )
    id = serializers.CharField(read_only=True)
    avatar_url = serializers.CharField(read_only=True)
    created_at = serializers.CharField(read_only=True)
    updated_at = serializers.CharField(read_only=True)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)
        errors = {key: [message] for key, message in self.NOT_HERE.items() if key in data}
        rest = {key: value for key, value in data.items() if key not in self.NOT_HERE}
        try:
            value = super().to_internal_value(rest)
        except serializers.ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, Mapping) else {"non_field_errors": exc.detail}
            raise serializers.ValidationError({**errors, **detail}) from None
        if errors:
            raise serializers.ValidationError(errors)
        return value


class DepartmentAgentsInput(InputSerializer):
    agent_ids = AgentIdsField(
        allow_empty=True,
        help_text="The department's agents from now on: agent ids of this widget; an unknown or foreign id is 422.",
    )


class DepartmentScheduleInput(InputSerializer):
    schedule = ScheduleField(
        help_text=(
            "Opening hours keyed by day name (Monday to Sunday): `full`, `{from, to}` or null; an omitted day is "
            "closed."
        )
    )

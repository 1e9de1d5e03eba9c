"""Agents, invitations, the agent event log and departments of the token's widget. State changes
go through apps.agents.services only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.parsers import LimitedMultiPartParser, StrictJSONParser
from apps.core.api.views import WidgetScopedViewSet
from apps.core.errors import NotFound
from apps.core.files import single_upload

from .. import selectors, services
from ..models import Agent, Department, Invitation
from . import serializers as s

# 10 invitations per hour per widget (spec, Limits).
# Transport cap of an avatar upload body. A file over 2048 KB inside it is 422 at `file`; a body over
# this cap is refused before it is read, with 413 body_too_large.
AVATAR_BODY_BYTES = 8 * 1024 * 1024


class _ApiJSONParser(StrictJSONParser):
    """JSON bodies keep the ordinary API body cap even on the view that accepts avatar uploads."""

    def parse(self, stream, media_type=None, parser_context=None):
        return super().parse(stream, media_type, {**(parser_context or {}), "view": None})


@extend_schema_view(
    list=extend_schema(
        summary="List agents",
        description=(
            "Agents of the token's widget, human, AI and webhook operators. Filters: `online` (1 or 0), `type`, "
            "`department_id` (an unknown department is 404), `status`. Agents are never created here: a human "
            "operator exists only by accepting an invitation."
        ),
    ),
    retrieve=extend_schema(
        summary="Get an agent",
    ),
    partial_update=extend_schema(
        summary="Update an agent",
    ),
    destroy=extend_schema(
        summary="Delete an agent",
    ),
    suspend=extend_schema(
        summary="Suspend an agent",
    ),
    restore=extend_schema(
        summary="Restore a suspended agent",
    ),
    avatar=extend_schema(
        summary="Upload an agent's avatar",
    ),
    events=extend_schema(
        summary="List an agent's events",
    ),
)
class AgentViewSet(WidgetScopedViewSet):
    """Agents of the token's widget. Agents are never created here: a human operator exists only by
    accepting an invitation, and AI operators belong to the AI operator endpoints."""

    queryset = Agent.objects.all()
    lookup_value_regex = r"[0-9]+"
    parser_classes = [_ApiJSONParser]
    max_body_bytes = AVATAR_BODY_BYTES
    route_scopes = {
        "list": ["agents:read"],
        "retrieve": ["agents:read"],
        "partial_update": ["agents:write"],
        "destroy": ["agents:write"],
        "suspend": ["agents:write"],
        "restore": ["agents:write"],
        "avatar": ["agents:write"],
        "delete_avatar": ["agents:write"],
        "events": ["agents:events:read"],
    }
    idempotency_required = {"partial_update", "suspend", "restore", "avatar"}
    problem_statuses = {
        "list": [404],
        "partial_update": [409],
        "destroy": [409],
        "suspend": [409],
        "restore": [409],
        "avatar": [409, 502],
    }

    def scope_queryset(self, queryset):
        return selectors.with_department_ids(queryset)

    def _payload(self, agent: Agent) -> dict:
        return s.agent_payload(
            agent, online_ids=selectors.online_agent_ids(self.request.widget), absolute=self.request.build_absolute_uri
        )

    def _fresh(self, agent: Agent) -> dict:
        """The agent as stored after a write (departments re-read)."""
        return self._payload(self.get_queryset().get(pk=agent.pk))

    @extend_schema(parameters=[s.AgentListQuery], responses={200: s.AgentDoc(many=True)})
    def list(self, request):
        query = self.validated(s.AgentListQuery, data=s.query_data(request))
        department = None
        if "department_id" in query:
            department_id = query["department_id"]  # None: an id no department can have
            if department_id is not None:
                department = selectors.find_department(request.widget, department_id)
            if department is None:
                raise NotFound("No such department.")
        online_ids = selectors.online_agent_ids(request.widget)
        queryset = selectors.filter_agents(
            self.get_queryset(),
            widget=request.widget,
            online={"1": True, "0": False}.get(query.get("online")),
            type=query.get("type"),
            department=department,
            status=query.get("status"),
            online_ids=online_ids,
        )
        page = self.paginate_queryset(queryset)
        absolute = request.build_absolute_uri
        return self.get_paginated_response([s.agent_payload(a, online_ids=online_ids, absolute=absolute) for a in page])

    @extend_schema(responses={200: s.AgentDoc}, description="Banned agents are included.")
    def retrieve(self, request, pk=None):
        return Response(self._payload(self.get_object()))

    @extend_schema(
        request=s.AgentPatchInput,
        responses={200: s.AgentDoc},
        description="`show_in_header` is the only writable member; any other is refused by name (422).",
    )
    def partial_update(self, request, pk=None):
        agent = self.get_object()
        data = self.validated(s.AgentPatchInput)
        agent = services.update_agent(widget=request.widget, agent=agent, changes=data)
        return Response(self._fresh(agent))

    @extend_schema(
        request=None,
        responses={204: None},
        description="Soft delete: the agent becomes `banned` and releases its seat; chats, ratings and the "
        "event log stay readable. Refused (409 agent_not_deletable) for the AI operator and the owner's row.",
    )
    def destroy(self, request, pk=None):
        services.delete_agent(widget=request.widget, agent=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: s.AgentDoc}, description="active or relaxation -> banned.")
    @action(detail=True, methods=["post"])
    def suspend(self, request, pk=None):
        agent = self.get_object()
        self.validated(s.EmptyInput)
        agent = services.suspend_agent(widget=request.widget, agent=agent)
        return Response(self._fresh(agent))

    @extend_schema(
        request=None,
        responses={200: s.AgentDoc},
        description="banned -> active (an external operator's agent: the status its lifecycle state gives); "
        "409 seat_limit_reached when a human agent has no free seat, 409 agent_not_restorable for the agent "
        "of a revoked external operator (revoked is final).",
    )
    @action(detail=True, methods=["post"])
    def restore(self, request, pk=None):
        agent = self.get_object()
        self.validated(s.EmptyInput)
        agent = services.restore_agent(widget=request.widget, agent=agent)
        return Response(self._fresh(agent))

    @extend_schema(
        request={"multipart/form-data": s.AvatarMultipartDoc},
        responses={201: s.AvatarDoc},
        description="Multipart `file`: jpeg, jpg, png, gif or webp (checked by content), at most 2048 KB; "
        "a wrong type or a larger file is 422 at `file`.",
    )
    @action(detail=True, methods=["post"], parser_classes=[LimitedMultiPartParser])
    def avatar(self, request, pk=None):
        agent = self.get_object()
        single_upload(request)
        data = self.validated(s.AvatarInput)
        agent = services.set_agent_avatar(
            widget=request.widget, agent=agent, content=data["file"]["content"], extension=data["file"]["extension"]
        )
        return Response(
            {"avatar_url": s.file_url(agent.avatar, request.build_absolute_uri)}, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        request=None,
        responses={204: None},
        summary="Remove an agent's avatar",
        description="Removes the uploaded avatar; the agent shows the default one again. 204 also when none was set.",
    )
    @avatar.mapping.delete
    def delete_avatar(self, request, pk=None):
        services.remove_agent_avatar(widget=request.widget, agent=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[s.AgentEventQuery],
        responses={200: s.AgentEventDoc(many=True)},
        description="Newest first. `type` is a stable slug; `message` is a Russian console string, not a contract.",
    )
    @action(detail=True, methods=["get"])
    def events(self, request, pk=None):
        agent = self.get_object()
        query = self.validated(s.AgentEventQuery, data=s.query_data(request))
        queryset = selectors.list_agent_events(widget=request.widget, agent=agent, type=query.get("type"))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([s.event_payload(e) for e in page])


def invitation_link(request, token: str) -> str:
    return services.invitation_link(token, absolute=request.build_absolute_uri)


@extend_schema_view(
    list=extend_schema(
        summary="List invitations",
    ),
    create=extend_schema(
        summary="Invite an operator",
    ),
    destroy=extend_schema(
        summary="Revoke an invitation",
    ),
)
class InvitationViewSet(WidgetScopedViewSet):
    """Invitations of the token's widget; the invitation object is never the link (the token is
    only in the e-mail)."""

    queryset = Invitation.objects.all()
    lookup_value_regex = r"[0-9]+"
    route_scopes = {"list": ["agents:read"], "create": ["agents:write"], "destroy": ["agents:write"]}
    idempotency_required = {"create"}
    problem_statuses = {"create": [409, 429, 502]}

    @extend_schema(responses={200: s.InvitationDoc(many=True)})
    def list(self, request):
        self.validated(s.EmptyInput, data=s.query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([s.invitation_payload(i) for i in page])

    @extend_schema(
        request=s.InvitationInput,
        responses={201: s.InvitationDoc},
        description="E-mails a link (valid 7 days) that makes the recipient a human operator of this widget. "
        "409 seat_limit_reached unless free seats outnumber outstanding invitations; at most 10 per hour per "
        "widget (429); the mail is sent before anything is stored, so 502 mail_failed leaves nothing behind.",
    )
    def create(self, request):
        data = self.validated(s.InvitationInput)
        invitation = services.invite_agent(
            widget=request.widget, email=data["email"], link_for=lambda token: invitation_link(request, token)
        )
        return Response(s.invitation_payload(invitation), status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None}, description="Revokes an outstanding invitation.")
    def destroy(self, request, pk=None):
        services.revoke_invitation(widget=request.widget, invitation=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(
        summary="List departments",
        description="Departments of the token's widget with their channels, agents and weekly schedule.",
    ),
    create=extend_schema(
        summary="Create a department",
        description=(
            "`{name, channels?, agent_ids?, schedule?}`: `agent_ids` are agents of this widget, `schedule` the weekly "
            "opening hours (Europe/Moscow)."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a department",
        description="One department of the widget with its channels, agents and schedule.",
    ),
    partial_update=extend_schema(
        summary="Update a department",
        description=(
            "`{name?, channels?}`; `agent_ids` and `schedule` have their own PUT routes and are refused here (422)."
        ),
    ),
    destroy=extend_schema(
        summary="Delete a department",
    ),
    agents=extend_schema(
        summary="Set a department's agents",
        description=(
            "`{agent_ids: [...]}` replaces the whole member list (empty allowed); every id is an agent of this widget."
        ),
    ),
    schedule=extend_schema(
        summary="Set a department's schedule",
        description="`{schedule}` replaces the weekly opening hours: an omitted day is closed.",
    ),
)
class DepartmentViewSet(WidgetScopedViewSet):
    """Departments of the token's widget."""

    queryset = Department.objects.all()
    lookup_value_regex = r"[0-9]+"
    route_scopes = {
        "list": ["departments:read"],
        "create": ["departments:write"],
        "retrieve": ["departments:read"],
        "partial_update": ["departments:write"],
        "destroy": ["departments:write"],
        "agents": ["departments:write"],
        "schedule": ["departments:write"],
    }
    idempotency_required = {"create", "partial_update", "agents", "schedule"}
    problem_statuses = {"create": [409], "partial_update": [409], "agents": [409], "schedule": [409]}

    def scope_queryset(self, queryset):
        return selectors.with_agent_ids(queryset)

    def _fresh(self, department: Department) -> dict:
        return s.department_payload(self.get_queryset().get(pk=department.pk), absolute=self.request.build_absolute_uri)

    @extend_schema(responses={200: s.DepartmentDoc(many=True)})
    def list(self, request):
        self.validated(s.EmptyInput, data=s.query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        absolute = request.build_absolute_uri
        return self.get_paginated_response([s.department_payload(d, absolute=absolute) for d in page])

    @extend_schema(request=s.DepartmentInput, responses={201: s.DepartmentDoc})
    def create(self, request):
        data = self.validated(s.DepartmentInput)
        department = services.create_department(
            widget=request.widget,
            name=data["name"],
            channels=data.get("channels"),
            agents=data.get("agent_ids"),
            schedule=data.get("schedule"),
        )
        return Response(self._fresh(department), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.DepartmentDoc})
    def retrieve(self, request, pk=None):
        return Response(s.department_payload(self.get_object(), absolute=request.build_absolute_uri))

    @extend_schema(request=s.DepartmentPatchInput, responses={200: s.DepartmentDoc})
    def partial_update(self, request, pk=None):
        department = self.get_object()
        data = self.validated(s.DepartmentPatchInput)
        department = services.update_department(
            widget=request.widget, department=department, name=data.get("name"), channels=data.get("channels")
        )
        return Response(self._fresh(department))

    @extend_schema(request=None, responses={204: None}, description="Chats the department produced stay.")
    def destroy(self, request, pk=None):
        services.delete_department(widget=request.widget, department=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.DepartmentAgentsInput, responses={200: s.DepartmentDoc})
    @action(detail=True, methods=["put"])
    def agents(self, request, pk=None):
        department = self.get_object()
        data = self.validated(s.DepartmentAgentsInput)
        department = services.set_department_agents(
            widget=request.widget, department=department, agents=data["agent_ids"]
        )
        return Response(self._fresh(department))

    @extend_schema(request=s.DepartmentScheduleInput, responses={200: s.DepartmentDoc})
    @action(detail=True, methods=["put"])
    def schedule(self, request, pk=None):
        department = self.get_object()
        data = self.validated(s.DepartmentScheduleInput)
        department = services.set_department_schedule(
            widget=request.widget, department=department, schedule=data["schedule"]
        )
        return Response(self._fresh(department))

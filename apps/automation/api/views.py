"""Automation rules of the token's widget and their run log."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.core.api.views import WidgetScopedViewSet

from .. import selectors, services
from ..models import AutomationRule
from . import serializers as s


def rule_payload(rule: AutomationRule) -> dict:
    return {
        "id": rule.pk,
        "name": rule.name,
        "enabled": rule.enabled,
        "event": rule.event,
        "conditions": rule.conditions,
        "actions": rule.actions,
        "created_at": rule.created_at.isoformat(),
        "updated_at": rule.updated_at.isoformat(),
    }


def run_payload(run: selectors.Run) -> dict:
    return {"at": run.at.isoformat(), "chat_id": run.chat_id, "outcome": run.outcome, "detail": run.detail}


@extend_schema_view(
    list=extend_schema(summary="List automation rules", description="The widget's rules in order of id."),
    create=extend_schema(
        summary="Create an automation rule",
        description="When `event` happens and every condition holds, the actions run on the event's chat, after "
        "the change committed, on a worker; what they cause never triggers rules again. 422 `validation_failed` "
        "names the member (`conditions.0.value`, `actions.1.agent_id`, ...).",
    ),
    retrieve=extend_schema(summary="Get an automation rule", description="Another widget's id is 404."),
    partial_update=extend_schema(
        summary="Change an automation rule",
        description="Members not sent keep their values; same rules as creating. Audited.",
    ),
    destroy=extend_schema(summary="Delete an automation rule", description="Deletes it and its runs (204)."),
)
class AutomationRuleViewSet(WidgetScopedViewSet):
    """Automation rules of the token's widget. Writes go through automation.services only."""

    queryset = AutomationRule.objects.all()
    cursor_ordering = ("id",)
    route_scopes = {
        "list": ["automation:read"],
        "create": ["automation:write"],
        "retrieve": ["automation:read"],
        "partial_update": ["automation:write"],
        "destroy": ["automation:write"],
        "runs": ["automation:read"],
    }
    idempotency_required = {"create", "partial_update", "destroy"}

    @extend_schema(responses={200: s.AutomationRuleDoc(many=True)})
    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([rule_payload(row) for row in page])

    @extend_schema(request=s.AutomationRuleInput, responses={201: s.AutomationRuleDoc})
    def create(self, request):
        data = self.validated(s.AutomationRuleInput)
        rule = services.create_rule(widget=request.widget, **data)
        return Response(rule_payload(rule), status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.AutomationRuleDoc})
    def retrieve(self, request, pk=None):
        return Response(rule_payload(self.get_object()))

    @extend_schema(request=s.AutomationRulePatchInput, responses={200: s.AutomationRuleDoc})
    def partial_update(self, request, pk=None):
        rule = self.get_object()
        data = self.validated(s.AutomationRulePatchInput, partial=True)
        rule = services.update_rule(widget=request.widget, rule=rule, changes=dict(data))
        return Response(rule_payload(rule))

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.delete_rule(widget=request.widget, rule=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="A rule's last runs",
        description="The last 100 evaluations of the rule, newest first: `matched`, `not_matched` or `failed` "
        "(with the refusal's own detail; the chat was left unchanged).",
        responses={200: s.AutomationRunsDoc},
    )
    @action(detail=True, methods=["get"])
    def runs(self, request, pk=None):
        rule = self.get_object()
        return Response({"data": [run_payload(run) for run in selectors.list_runs(widget=request.widget, rule=rule)]})

import time

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.agents.models import Agent
from apps.core.api.serializers import (
    InputSerializer,
    StrictCharField,
    StrictFloatField,
    StrictStringMixin,
    TenantPrimaryKeyField,
)
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.events import CHAT_CLOSED, emit

from .models import Note


class NoteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Note
        fields = ["id", "title", "agent_id", "created_at"]


class StrictURLField(StrictStringMixin, serializers.URLField):
    pass


class NoteButtonInput(InputSerializer):
    label = StrictCharField(min_length=1, max_length=64)
    url = StrictURLField()


class NoteKeyboardInput(InputSerializer):
    buttons = NoteButtonInput(many=True, max_length=7)


class NoteInput(InputSerializer):
    id = serializers.IntegerField(read_only=True)
    title = StrictCharField(max_length=100)
    agent_id = TenantPrimaryKeyField(queryset=Agent.objects.all(), required=False, missing="422")
    keyboard = NoteKeyboardInput(required=False)
    slow = StrictFloatField(required=False, min_value=0, max_value=2)


class AssignInput(InputSerializer):
    agent_id = TenantPrimaryKeyField(queryset=Agent.objects.all())


class NoteViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
):
    """Notes of the token's widget (test-only resource)."""

    queryset = Note.objects.all()
    serializer_class = NoteSerializer
    route_scopes = {
        "list": ["chats:read"],
        "retrieve": ["chats:read"],
        "create": ["chats:write"],
        "destroy": ["chats:write", "contacts:write"],
        "assign": ["chats:write"],
    }
    idempotency_required = {"create"}

    @extend_schema(request=NoteInput, responses={201: NoteSerializer})
    def create(self, request):
        data = self.validated(NoteInput)
        note = Note.objects.create(widget=request.widget, title=data["title"], agent=data.get("agent_id"))
        if data.get("slow"):
            time.sleep(data["slow"])
        emit(request.widget, CHAT_CLOSED, chat_id=note.pk, reason="created")
        return Response(NoteSerializer(note).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=AssignInput, responses={200: NoteSerializer})
    @action(detail=True, methods=["post"])
    def assign(self, request, pk=None):
        note = self.get_object()
        note.agent = self.validated(AssignInput)["agent_id"]
        note.save(update_fields=["agent"])
        return Response(NoteSerializer(note).data)


class PingView(ScopedAPIView):
    """Answers pong."""

    route_scopes = {"get": ["stats:read"]}

    @extend_schema(responses={200: inline_serializer("Pong", {"pong": serializers.BooleanField()})})
    def get(self, request):
        return Response({"pong": True})


class BoomView(ScopedAPIView):
    """Always fails with an unexpected error."""

    route_scopes = {"get": ["stats:read"]}

    @extend_schema(responses={200: inline_serializer("Boom", {"never": serializers.BooleanField()})})
    def get(self, request):
        raise RuntimeError("boom with secret stack detail")

"""The signed application-assistant endpoints of the AI app: one assistant turn, speech to text and
text to speech. Authenticated by the bound token and the signed envelope of apps.core.signed (the
same verifier as the support app's ticket and account-link endpoints); replay protection is the
nonce, no idempotency header."""

from __future__ import annotations

import io

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from apps.core import signed
from apps.core.api.serializers import InputSerializer, StrictCharField, StrictRegexField
from apps.core.api.views import ScopedAPIView

from .. import signed_assistant

IDENTIFIER = r"^[A-Za-z0-9_.:-]{1,128}$"
SIGNED_PROBLEMS = [401, 403, 409, 413, 415, 422, 429, 502, 503]
ENVELOPE = signed.OPENAPI_ENVELOPE


class SignedAssistantView(ScopedAPIView):
    """SECURITY: authentication -> the per-token rate limit -> api_enabled and `ai:write` -> the signed
    envelope (bound token, signature, timestamp, nonce) -> input rules -> the per-widget budget ->
    the provider."""

    abstract = True
    route_scopes = {"post": ["ai:write"]}
    problem_statuses = {"post": SIGNED_PROBLEMS}

    def check_permissions(self, request):
        super().check_permissions(request)
        signed.verify(
            widget=request.widget,
            token=request.auth,
            meta=request.META,
            method=request.method,
            path=request.path,
            body=self._raw_body(request),
        )

    # The body this view read from the stream itself (a route whose body may pass Django's buffer).
    streamed_body: bytes | None = None

    def _raw_body(self, request) -> bytes:
        """The raw bytes the signature covers, read before the parser runs.

        Django buffers at most DATA_UPLOAD_MAX_MEMORY_SIZE through `request.body`; a route that
        accepts more (speech to text: 6 MiB of audio as base64) reads DRF's `request.stream` itself,
        bounded by its `max_body_bytes` (BodySizeLimitMiddleware refused anything longer before the
        view), and `validated` then parses those bytes as DRF's `request.data` would."""
        limit = getattr(self, "max_body_bytes", None) or settings.API_MAX_BODY_BYTES
        if limit <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return request.body
        if self.streamed_body is None:
            stream = request.stream  # None for an empty body
            self.streamed_body = stream.read(limit + 1) if stream is not None else b""
        return self.streamed_body

    def validated(self, serializer_class, *, data=None, **kwargs) -> dict:
        if data is None and self.streamed_body is not None:
            data = self._parsed(self.streamed_body)
        return super().validated(serializer_class, data=data, **kwargs)

    def _parsed(self, body: bytes):
        """`body` parsed as DRF's `Request._parse` parses a request's stream: no body or no content
        type is empty data, a type no parser takes is 415, a malformed body the parser's 400."""
        request = self.request
        media_type = request.content_type
        if not body or media_type is None:
            return {}
        parser = request.negotiator.select_parser(request, request.parsers)
        if parser is None:
            raise exceptions.UnsupportedMediaType(media_type)
        return parser.parse(io.BytesIO(body), media_type, self.get_parser_context(request))


# --- inputs and documented outputs ----------------------------------------------------------------------


class TurnMessageInput(InputSerializer):
    role = serializers.ChoiceField(choices=["user", "assistant"], help_text="`user` or `assistant`.")
    content = StrictCharField(
        min_length=1, max_length=signed_assistant.MAX_TEXT, trim_whitespace=False, help_text="The message's text."
    )


class ToolInput(InputSerializer):
    name = StrictRegexField(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$", help_text="The tool's name, as tool calls name it.")
    description = StrictCharField(
        max_length=1000, required=False, allow_blank=True, help_text="What the tool does, up to 1000 characters."
    )
    parameters = serializers.DictField(
        required=False,
        help_text=(
            "The tool's arguments as a JSON Schema object; `$ref` only inside it (`#...`), no `patternProperties`."
        ),
    )


class ToolResultInput(InputSerializer):
    call_id = StrictRegexField(IDENTIFIER, help_text="The `id` of the tool call this answers.")
    name = StrictRegexField(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$", help_text="The tool's name.")
    content = StrictCharField(
        max_length=signed_assistant.MAX_TEXT,
        allow_blank=True,
        trim_whitespace=False,
        help_text="What the tool returned, as text.",
    )


class TurnInput(InputSerializer):
    conversation_id = StrictRegexField(IDENTIFIER, help_text="Your id of the conversation.")
    request_id = StrictRegexField(IDENTIFIER, help_text="Your id of this request.")
    messages = TurnMessageInput(
        many=True,
        min_length=1,
        max_length=signed_assistant.MAX_MESSAGES,
        help_text="The conversation so far, oldest first; the integrating backend keeps the history.",
    )
    context = serializers.DictField(
        required=False, help_text="What the application knows (locale, screen, account facts): data, not instructions."
    )
    tools = ToolInput(
        many=True,
        required=False,
        max_length=signed_assistant.MAX_TOOLS,
        help_text="Tools the assistant may plan calls to.",
    )
    tool_results = ToolResultInput(
        many=True,
        required=False,
        max_length=signed_assistant.MAX_TOOLS,
        help_text="Results of the tool calls the previous turn planned.",
    )


class ReplyDoc(serializers.Serializer):
    text = serializers.CharField(help_text="The reply's text.")
    transformation = serializers.CharField(help_text="As the detached test's `transformation`.")
    escalate = serializers.BooleanField(help_text="The assistant hands the conversation to people.")
    escalation_reason = serializers.CharField(
        allow_null=True, help_text="Why the assistant hands over; null without escalation."
    )
    outcome = serializers.CharField(
        allow_null=True, help_text="null, handover_notice, handover_offline or handover_unknown"
    )


class ToolCallDoc(serializers.Serializer):
    id = serializers.CharField(help_text="The call's id: send it back as `call_id` of its result.")
    name = serializers.CharField(help_text="The tool to call.")
    arguments = serializers.DictField(help_text="The call's arguments.")


class TurnDoc(serializers.Serializer):
    conversation_id = serializers.CharField(help_text="The `conversation_id` sent.")
    request_id = serializers.CharField(help_text="The `request_id` sent.")
    type = serializers.ChoiceField(
        choices=["reply", "tool_plan"], help_text="`reply` (see `reply`) or `tool_plan` (see `tool_calls`)."
    )
    reply = ReplyDoc(allow_null=True, help_text="The validated reply; null for a tool plan.")
    tool_calls = ToolCallDoc(
        many=True, help_text="The planned tool calls; the integrating backend authorises, confirms and runs them."
    )
    provider = serializers.CharField(help_text="The provider that answered.")
    model = serializers.CharField(help_text="The model that answered.")
    provider_path = serializers.ChoiceField(
        choices=["primary", "fallback"], help_text="`primary`, or `fallback` when a declared backup answered."
    )


class SpeechToTextInput(InputSerializer):
    audio_base64 = StrictCharField(trim_whitespace=False, help_text="At most 6 MiB once decoded.")
    mime_type = serializers.ChoiceField(
        choices=sorted(signed_assistant.AUDIO_TYPES), help_text="The audio's media type."
    )
    language = StrictRegexField(r"^[a-z]{2}$", required=False, help_text="ISO 639-1 code of the speech.")


class SpeechToTextDoc(serializers.Serializer):
    text = serializers.CharField(help_text="The recognised text.")


class TextToSpeechInput(InputSerializer):
    text = StrictCharField(
        min_length=1, max_length=signed_assistant.MAX_TEXT, help_text="The text to speak, up to 4000 characters."
    )
    voice = serializers.ChoiceField(
        choices=list(signed_assistant.VOICES), required=False, help_text="The voice; optional."
    )
    format = serializers.ChoiceField(
        choices=list(signed_assistant.SPEECH_FORMATS), required=False, help_text="The audio format; optional."
    )


class TextToSpeechDoc(serializers.Serializer):
    audio_base64 = serializers.CharField(help_text="The audio, base64-encoded.")
    mime_type = serializers.CharField(help_text="The audio's media type.")
    format = serializers.CharField(help_text="The audio format.")


# --- views -------------------------------------------------------------------------------------------------


class AssistantTurnView(SignedAssistantView):
    @extend_schema(
        summary="Run one assistant turn (signed)",
        description="The integrating backend sends the conversation (`messages`, oldest first, the user's "
        "last unless `tool_results` follow up a plan), its `context` and the `tools` it offers; the answer is a "
        "validated `reply` (hand-off marker, escalation triggers and the platform safety floors applied as for the AI "
        "operator: a reply that leaks a key or the system prompt is a hand-over with the reason `floor:<name>`) or a "
        "`tool_plan` whose calls name declared tools with arguments valid against their JSON Schema. History, "
        "authorization, confirmation and execution stay with the caller. 30 per minute per widget; 422 "
        "`invalid_input`, 502 `provider_failure` / `invalid_tool_plan`, 503 `assistant_unavailable`." + ENVELOPE,
        request=TurnInput,
        responses={200: TurnDoc},
    )
    def post(self, request):
        data = self.validated(TurnInput)
        return Response(signed_assistant.run_turn(widget=request.widget, data=data))


class SpeechToTextView(SignedAssistantView):
    max_body_bytes = signed_assistant.SPEECH_BODY_BYTES

    @extend_schema(
        summary="Transcribe speech (signed)",
        description="`audio_base64` (at most 6 MiB decoded: 413 `audio_too_large`) of `mime_type`, optional "
        "`language`; answers `{text}`. Only with the reference vendor (`openai`) as the integration's provider "
        "(else 422 `speech_unsupported`). 20 per minute per widget." + ENVELOPE,
        request=SpeechToTextInput,
        responses={200: SpeechToTextDoc},
    )
    def post(self, request):
        data = self.validated(SpeechToTextInput)
        return Response(signed_assistant.speech_to_text(widget=request.widget, data=data))


class TextToSpeechView(SignedAssistantView):
    @extend_schema(
        summary="Synthesize speech (signed)",
        description="`text` (1 to 4000 characters), optional `voice` and `format` (default mp3); answers "
        "`{audio_base64, mime_type, format}`. Only with the reference vendor (`openai`) as the integration's "
        "provider (else 422 `speech_unsupported`). 20 per minute per widget." + ENVELOPE,
        request=TextToSpeechInput,
        responses={200: TextToSpeechDoc},
    )
    def post(self, request):
        data = self.validated(TextToSpeechInput)
        return Response(signed_assistant.text_to_speech(widget=request.widget, data=data))

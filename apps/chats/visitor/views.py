"""The visitor API under /api/visitor/v1/{button_guid}/: what the embed script speaks.

Not a bearer API: no token, no scopes, no idempotency keys; in the OpenAPI document under the tag
`visitor` with the security scheme `Visitor` (schema.py). Views are thin: parse, call one
apps.chats.visitor.services function, shape the answer.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agents import selectors as agent_selectors
from apps.core.api.negotiation import AcceptNegotiation
from apps.core.api.parsers import LimitedMultiPartParser, StrictJSONParser
from apps.core.api.query import query_data
from apps.core.api.renderers import APIJSONRenderer
from apps.core.api.serializers import validate_input
from apps.core.files import single_upload
from apps.core.logging import note_request
from apps.widget import selectors as widget_selectors

from .. import services as chat_services
from ..payloads import visitor_message_frame
from . import auth, docs, prechat, services
from . import serializers as s
from .schema import VisitorAutoSchema, visitor_operation

CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Retry-After, WWW-Authenticate, X-Request-Id",
}
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "600",
}


class VisitorAPIView(APIView):
    """Base of every visitor view.

    SECURITY: the order of checks on every request is: widget from `button_guid` (unknown: 404,
    whatever `api_enabled` says) -> the session from `Authorization: Visitor <token>` when
    `session_required` (missing or invalid: 401 with `WWW-Authenticate: Visitor`) -> the route's
    rate budgets per address and per widget (429 with Retry-After) -> the action, which parses
    JSON only (415 otherwise) with strict inputs (unknown members 422). The widget and contact come
    from the path and the session only, never from the body. Answers allow any origin (the embed
    script runs on the customer's site) and carry no cookies.
    """

    authentication_classes = ()
    permission_classes = ()
    throttle_classes = ()
    parser_classes = (StrictJSONParser,)
    renderer_classes = (APIJSONRenderer,)
    content_negotiation_class = AcceptNegotiation
    schema = VisitorAutoSchema()

    session_required = True
    path_parameter_help = {
        "button_guid": "The widget's public 32-character hex guid, as the embed code carries it; an unknown one is 404."
    }
    # HTTP method -> kind of budget in auth.LIMITS.
    rate_limits: dict[str, str] = {}

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.method == "OPTIONS":
            return
        self.widget = auth.resolve_widget(kwargs.get("button_guid"))
        request.widget = self.widget
        note_request(widget=self.widget)  # the request log names the widget
        self.session = auth.authenticate(request, widget=self.widget) if self.session_required else None
        self.contact = self.session.contact if self.session is not None else None
        method = request.method.lower()
        kind = self.rate_limits.get("get" if method == "head" else method)
        if kind is not None:
            auth.admit(kind, widget=self.widget, address=auth.client_address(request))

    def options(self, request, *args, **kwargs):
        """CORS preflight: no widget lookup, no session."""
        allowed = ", ".join(m for m in self.allowed_methods if m != "OPTIONS")
        headers = {**PREFLIGHT_HEADERS, "Access-Control-Allow-Methods": allowed}
        return Response(status=status.HTTP_204_NO_CONTENT, headers=headers)

    def validated(self, serializer_class, *, data=None) -> dict:
        return validate_input(
            serializer_class,
            self.request.data if data is None else data,
            context={"request": self.request, "widget": self.widget, "contact": self.contact},
        )

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in CORS_HEADERS.items():
            response[name] = value
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class ConfigView(VisitorAPIView):
    """GET config: public appearance and language settings (no session)."""

    session_required = False
    rate_limits = {"get": "reads"}

    @visitor_operation(
        summary="Visitor: widget config",
        description="What the embed script starts with: the widget's name, language, public appearance "
        "settings, interface texts, custom icon URLs, feature switches, whether someone answers now "
        "(`online`: a person's console is open, or the built-in AI or an external operator answers, inside the "
        "business hours; `people_online`: the same for people alone), the business hours (`open`, `opens_at`, "
        "`outside_hours`) and the operators the header shows (`operators`, chosen by `operators_display_mode`, "
        "with live presence). No session needed; cacheable for 60 s (`online`, `people_online`, `open`, "
        "`opens_at` and the operators' `presence` are computed per request).",
        responses={200: docs.VisitorConfigDoc},
    )
    def get(self, request, button_guid: str):
        absolute = request.build_absolute_uri
        payload = widget_selectors.public_config(
            widget=self.widget,
            base=lambda: s.config_payload(
                self.widget,
                online=False,
                operators=services.header_roster(self.widget, absolute=absolute),
                absolute=absolute,
            ),
            absolute=absolute,
        )
        # Presence is live: never served from the cached config. Who may answer is cached with it
        # (the roster too; their internal members never leave this view); which of them is online
        # is one read of the presence store, no database query.
        answering = services.answerers(self.widget)
        connected = agent_selectors.online_agent_ids(self.widget)
        mode = (payload.get("settings") or {}).get("operators_display_mode") or "online"
        hours = widget_selectors.business_hours_state(self.widget)
        payload = {
            **payload,
            "online": hours.open and services.is_online(answering=answering, connected=connected),
            "people_online": hours.open and services.people_online(answering=answering, connected=connected),
            "open": hours.open,
            "opens_at": hours.opens_at_iso(),
            "outside_hours": hours.mode if hours.enabled else None,
            "operators": services.header_operators(
                self.widget,
                roster=payload.get("operators") or [],
                mode=mode,
                connected=connected,
                ai_answers=answering["machines"].get("ai", False),
            ),
        }
        return Response(payload, headers={"Cache-Control": "public, max-age=60"})


class SessionsView(VisitorAPIView):
    """POST sessions: a new contact and its session token (shown once). DELETE sessions: the
    calling session ends (`ChatWidget.reset()`)."""

    rate_limits = {"post": "sessions", "delete": "actions"}

    @property
    def session_required(self) -> bool:
        request = getattr(self, "request", None)
        return getattr(request, "method", "") == "DELETE"

    @visitor_operation(
        summary="Visitor: start a session",
        description="Creates a contact and its visitor session; the `session_token` is answered once. "
        "Every member is optional (`name`, `email`, `phone`, `locale`, `page_url`). Limited per client "
        "address (`VISITOR_SESSIONS_PER_ADDRESS_PER_HOUR`, 30 by default).",
        request=s.SessionInput,
        responses={201: docs.VisitorSessionDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.SessionInput)
        session, token = services.start_session(widget=self.widget, **data)
        return Response({"session_token": token, "client_id": session.contact.guid}, status=status.HTTP_201_CREATED)

    @visitor_operation(
        summary="Visitor: end the session",
        description="`ChatWidget.reset()` (the site's logout): the calling session ends and its token answers 401 "
        "from now on; the contact and its conversation stay. The widget then starts anonymous (a new session "
        "when the visitor next writes).",
        responses={204: None},
    )
    def delete(self, request, button_guid: str):
        services.end_session(widget=self.widget, session=self.session)
        return Response(status=status.HTTP_204_NO_CONTENT)


class IdentityView(VisitorAPIView):
    """POST identity: `ChatWidget.setUser`."""

    rate_limits = {"post": "actions"}

    @visitor_operation(
        summary="Visitor: identify the person",
        description="`ChatWidget.setUser`: `{id, hash?, name?, email?, phone?, attributes?}`, `hash` the lowercase hex "
        "HMAC-SHA256 of `id` under the widget's identity secret (or the one before it, 24 hours after a rotation). "
        "While `identity_verification` is `optional` or `required`, a right hash joins the session to the "
        "widget's one contact with that verified id (history on every device); a wrong or missing hash keeps "
        "the id as an unverified detail under `optional` and `off`, and under `required` answers 401 "
        "`identity_unverified` and ends the session (nothing else changes). `attributes` follow the rules of "
        "`PATCH .../attributes` (422 keyed by the attribute, nothing changed).",
        request=s.IdentityInput,
        responses={200: docs.VisitorIdentityDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.IdentityInput)
        found = services.set_user(
            widget=self.widget,
            session=self.session,
            external_id=data["id"],
            hash=data.get("hash"),
            details={field: data[field] for field in ("name", "email", "phone") if field in data},
            attributes=data.get("attributes"),
        )
        return Response({"verified": found.verified, "contact_id": found.contact.guid})


ATTRIBUTE_VALUE_SCHEMA = {"oneOf": [{"type": "string", "maxLength": 500}, {"type": "number"}, {"type": "boolean"}]}


class AttributesView(VisitorAPIView):
    """PATCH attributes: `ChatWidget.setAttributes`."""

    rate_limits = {"patch": "actions"}

    @visitor_operation(
        summary="Visitor: set attributes",
        description="`ChatWidget.setAttributes`: `{key: value, ...}` merged into the contact's attributes; keys "
        "`[a-z0-9_]{1,40}`, values a string (at most 500 characters), a number or a boolean, at most 50 attributes "
        "per contact. A call past a limit is refused whole (422, `errors` keyed by the attribute's key). While "
        "`identity_verification` is `required`, only a verified person's session may write (401 "
        "`identity_unverified` otherwise; the session stays).",
        request={
            "application/json": {
                "type": "object",
                "additionalProperties": ATTRIBUTE_VALUE_SCHEMA,
                "propertyNames": {"pattern": "^[a-z0-9_]{1,40}$"},
            }
        },
        responses={200: docs.VisitorAttributesDoc},
    )
    def patch(self, request, button_guid: str):
        attributes = services.set_visitor_attributes(widget=self.widget, contact=self.contact, values=request.data)
        return Response({"attributes": attributes})


class MessagesView(VisitorAPIView):
    """GET: what the visitor may see, oldest first, at most 200 per call after `after_id`.
    POST: the visitor writes; the first message makes the room."""

    rate_limits = {"get": "reads", "post": "messages"}

    @visitor_operation(
        summary="Visitor: list messages",
        description="The messages the visitor may see in their conversation, oldest first, at most 200 "
        "per call: pass the last `id` seen as `after_id` for the next ones. Empty before the first "
        "message. The websocket pushes the same message frames live.",
        parameters=[OpenApiParameter("after_id", int, description="Only messages with a greater id.")],
        responses={200: docs.VisitorMessageListDoc},
    )
    def get(self, request, button_guid: str):
        query = self.validated(s.MessageListQuery, data=query_data(request, skip=()))
        chat = services.get_room(widget=self.widget, contact=self.contact)
        messages = []
        past_every_id = "after_id" in query and query["after_id"] is None
        if chat is not None and not past_every_id:
            messages = services.list_visible_messages(
                widget=self.widget, chat_id=chat.pk, after_id=query.get("after_id") or 0
            )
        return Response({"data": [visitor_message_frame(m) for m in messages]})

    @visitor_operation(
        summary="Visitor: send a message",
        description='`{type: "text", body}` (1 to 4,096 characters, not blank) or '
        '`{type: "file" | "image", file_id}` with the `id` of the visitor\'s own upload '
        "(`POST .../files`; `image` needs an image file). The first message opens the conversation. "
        "Limited per client address (`VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE`, 60 by default). With "
        "`proactive_id` (a reply to a proactive message) a message that starts the conversation is preceded by "
        "the proactive text, in the visitor's language, as its sender's message.",
        request=s.MessageInput,
        responses={201: docs.VisitorMessageCreatedDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.MessageInput)
        file = data.get("file")
        message = services.send_message(
            widget=self.widget,
            contact=self.contact,
            data=chat_services.MessageInput(
                type=data["type"], body=data.get("body", ""), file_id=file.pk if file is not None else None
            ),
            proactive=data.get("proactive"),
        )
        return Response(s.message_created_payload(message), status=status.HTTP_201_CREATED)


class ProactiveEventsView(VisitorAPIView):
    """POST proactive/{id}/events: the widget showed a proactive message, or the visitor opened it."""

    session_required = False  # a visitor sees a bubble before writing
    rate_limits = {"post": "actions"}
    path_parameter_help = {
        **VisitorAPIView.path_parameter_help,
        "proactive_id": "The proactive message's `id` (the config's `proactive_messages`).",
    }

    @visitor_operation(
        summary="Visitor: a proactive message shown or opened",
        description="`{kind: shown | opened}`, counted in the message's statistics (`shown`: the bubble was shown; "
        "`opened`: the visitor clicked it). No session needed. An unknown, disabled or other widget's id is 404. "
        "Limited per client address like typing (twice `VISITOR_MESSAGES_PER_ADDRESS_PER_MINUTE`).",
        request=s.ProactiveEventInput,
        responses={204: None},
    )
    def post(self, request, button_guid: str, proactive_id: str):
        data = self.validated(s.ProactiveEventInput)
        services.note_proactive(widget=self.widget, message_id=int(proactive_id), kind=data["kind"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class TypingView(VisitorAPIView):
    rate_limits = {"post": "actions"}

    @visitor_operation(
        summary="Visitor: typing indicator",
        description="`{state: start | stop}`, forwarded to the operators about once per 5 s per chat "
        "(`forwarded` says whether this one was); nothing is forwarded before the first message.",
        request=s.TypingInput,
        responses={202: docs.VisitorTypingDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.TypingInput)
        forwarded = services.note_typing(widget=self.widget, contact=self.contact, state=data["state"])
        return Response({"status": "accepted", "forwarded": forwarded}, status=status.HTTP_202_ACCEPTED)


class QueueView(VisitorAPIView):
    rate_limits = {"get": "reads"}

    @visitor_operation(
        summary="Visitor: place in the queue",
        description="While the visitor's conversation waits for an operator in the routing queue: "
        "`{position, estimated_wait_seconds}`, `position` 1 being the next to be served, the wait the position "
        "times the median wait of the widget's last 50 assigned chats (null with fewer than 5). Both null when "
        "the conversation does not wait (or there is none yet) and while the widget's `show_queue_position` is "
        "off. The websocket pushes a `queue` frame whenever either changes.",
        responses={200: docs.VisitorQueueDoc},
    )
    def get(self, request, button_guid: str):
        return Response(services.queue_place(widget=self.widget, contact=self.contact))


class RatingView(VisitorAPIView):
    rate_limits = {"post": "actions"}
    problem_statuses = {"post": [409]}  # documented: no_conversation, rating_off

    @visitor_operation(
        summary="Visitor: rate the conversation",
        description="`{value: 1..5, comment?}` (comment up to 2,000 characters). 409 `no_conversation` "
        "before the visitor's first message or in a spam conversation; 409 `rating_off` while the widget's "
        "`rating_mode` is `off`; a later rating replaces the first. With `rating_scale: thumbs` the value is "
        "1 (thumbs down) or 5 (thumbs up), 422 otherwise.",
        request=s.RatingInput,
        responses={201: docs.VisitorRatingDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.RatingInput)
        rating = services.rate(
            widget=self.widget, contact=self.contact, value=data["value"], comment=data.get("comment", "")
        )
        return Response(
            {"chat_id": rating.chat_id, "value": rating.value, "comment": rating.comment},
            status=status.HTTP_201_CREATED,
        )


class PrechatView(VisitorAPIView):
    rate_limits = {"post": "actions"}
    problem_statuses = {"post": [409]}  # documented: prechat_off

    @visitor_operation(
        summary="Visitor: answer the pre-chat form",
        description="`{values: {key: value}}`, checked against the widget's `prechat` setting: each answer by "
        "its field's type (text up to 500 characters, `email` and `phone` by the contact's rules, a JSON number, "
        "a select option's `value`, true or false for a checkbox; a required checkbox must be true), every "
        "required field present, no key the form does not have. A refusal is 422 with `errors` keyed "
        "`fields.<key>` and writes nothing. `name`, `email` and `phone` fill the contact's fields, the other "
        "answers go into its attributes (a consent is stored as true). 409 `prechat_off` while `prechat.when` "
        "is `never`.",
        request=s.PrechatInput,
        responses={200: docs.VisitorPrechatDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.PrechatInput)
        stored = prechat.submit_prechat(widget=self.widget, contact=self.contact, values=data["values"])
        return Response({"values": stored})


class OfflineView(VisitorAPIView):
    rate_limits = {"post": "messages"}

    @visitor_operation(
        summary="Visitor: leave an offline message",
        description="The offline / callback form: `{message, name?, email?, phone?}`, stored as a message "
        "of the visitor's conversation (emits `offline_message.created` while no operator is connected).",
        request=s.OfflineInput,
        responses={201: docs.VisitorMessageCreatedDoc},
    )
    def post(self, request, button_guid: str):
        data = self.validated(s.OfflineInput)
        message = services.submit_offline_message(
            widget=self.widget,
            contact=self.contact,
            message=data["message"],
            name=data.get("name", ""),
            email=data.get("email", ""),
            phone=data.get("phone", ""),
        )
        return Response(s.message_created_payload(message), status=status.HTTP_201_CREATED)


class FilesView(VisitorAPIView):
    """POST files: multipart `file` (one, at most 10 MB). The answer's `id` is then sent as
    `{type: "file" | "image", file_id}` to POST messages; a visitor can attach only its own uploads."""

    parser_classes = (LimitedMultiPartParser,)
    # A 10 MB file plus multipart framing passes the body gate; the file itself is checked after.
    max_body_bytes = settings.API_FILE_UPLOAD_MAX_BYTES
    rate_limits = {"post": "uploads"}

    @visitor_operation(
        summary="Visitor: upload a file",
        description="Multipart with one part, `file` (at most 10 MB). Send the answer's `id` as `file_id` "
        "of a `file` or `image` message; a visitor can attach only its own uploads.",
        request={"multipart/form-data": docs.VisitorFileUploadDoc},
        responses={201: docs.VisitorFileDoc},
    )
    def post(self, request, button_guid: str):
        single_upload(request)
        data = self.validated(s.FileUploadInput)
        file = services.upload_file(widget=self.widget, contact=self.contact, upload=data["file"])
        return Response(s.file_created_payload(file), status=status.HTTP_201_CREATED)

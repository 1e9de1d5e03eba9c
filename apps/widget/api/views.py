"""Widget settings routes: settings and their schema, language, skins, icons, embed, cache purge.

Thin: parse, call one service or selector, wrap the answer in `{data: ...}`. Validation and the
field list come from `apps.widget.settings_schema` (the one definition); every write goes through
`apps.widget.services`, which purges the served widget cache before the answer.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.core.api.parsers import LimitedMultiPartParser
from apps.core.api.serializers import refuse_body, validate_input
from apps.core.api.views import ScopedAPIView
from apps.core.files import single_upload

from .. import selectors, services
from .. import settings_schema as schema
from ..icons import ICON_MAX_BYTES
from . import serializers as s

SETTINGS_RULES = (
    "Writable fields, their types, constraints, defaults and PATCH semantics: GET /v1/widget/settings/schema "
    "(generated from the same definition as the validation). Legacy widgets (created before 2025-01-01 UTC) "
    "default to language ru, supported [ru, en], fallback ru, AI translation off; new widgets to auto, [ru, en], "
    "fallback en, AI off. Messenger credentials, AI, map, price-list, logo and quick-phrase subtrees are never "
    "part of the settings."
)


class WidgetSettingsView(ScopedAPIView):
    """GET and PATCH /v1/widget/settings."""

    route_scopes = {"get": ["widget:read"], "patch": ["widget:write"]}
    idempotency_required = {"patch"}
    # 404 is listed by the spec's table for PATCH; the token's own widget always exists.
    problem_statuses = {"patch": [404, 409]}

    @extend_schema(
        summary="Widget settings",
        description="Every appearance and behaviour setting with its effective value (the stored value, else the "
        "render default), plus the read-only members. " + SETTINGS_RULES,
        responses={200: s.WidgetSettingsEnvelope},
    )
    def get(self, request):
        return Response({"data": selectors.settings_payload(request.widget)})

    @extend_schema(
        summary="Update widget settings",
        description="Any subset of the writable fields; merge-safe (fields not sent keep their values, concurrent "
        "PATCHes of different fields both survive). Explicit null removes the stored key (the render default "
        "applies); the six localization-policy fields refuse null. Invalid input is 422 and nothing is stored; "
        "unknown and read-only members are refused by name. `device_profiles` merges deeply (omission keeps, leaf "
        "null removes an override, device or root null removes profiles, `enabled: false` keeps the data but "
        "renders with the base settings); `widget_text_translations` replaces the whole matrix ({} or null clears; "
        "keys must be enabled locales). A change of a localization-policy field or the matrix increments "
        "`widget_language_policy_revision`. Every successful PATCH purges the served widget cache before "
        "answering. " + SETTINGS_RULES,
        request={"application/json": s.WidgetSettingsPatchDoc},
        responses={200: s.WidgetSettingsEnvelope},
    )
    def patch(self, request):
        row = services.update_settings(widget=request.widget, body=request.data)
        return Response({"data": selectors.settings_payload(request.widget, row)})


class WidgetSettingsSchemaView(ScopedAPIView):
    """GET /v1/widget/settings/schema."""

    route_scopes = {"get": ["widget:read"]}

    @extend_schema(
        summary="Widget settings schema",
        description="Every settings field (read-only members included) as declared in the one definition the "
        "validation and GET /v1/widget/settings use: `strict_json_type`, `accepted_types`, `accepted_values`, "
        "`enum`, ranges (`minimum`/`maximum`, `min_length`/`max_length`, `min_items`/`max_items`), `pattern` "
        "(PCRE with delimiters), `default`, `defaults` per widget generation, `effective_default` for this "
        "widget, `default_semantics`, `patch` semantics, `validation_rules` and `catalog_url`.",
        responses={200: s.SettingsSchemaEnvelope},
    )
    def get(self, request):
        ctx = selectors.settings_context(request.widget)
        return Response({"data": schema.schema_document(ctx)})


_LANGUAGE_FIELD = schema.FIELDS["widget_default_language"]
_LANGUAGE_INPUT = {
    "type": "object",
    "required": ["widget_default_language"],
    "properties": {"widget_default_language": _LANGUAGE_FIELD.openapi(write=True)},
    "additionalProperties": False,
}


class WidgetLanguageView(ScopedAPIView):
    """GET and PUT /v1/widget/language."""

    route_scopes = {"get": ["widget:read"], "put": ["widget:write"]}
    idempotency_required = {"put"}

    @extend_schema(
        summary="Widget default language",
        description="`widget_default_language` (auto or a language), `is_default` (no value stored: the implicit "
        "default applies) and `effective_language`.",
        responses={200: s.LanguageEnvelope},
    )
    def get(self, request):
        return Response({"data": selectors.language_payload(request.widget)})

    @extend_schema(
        summary="Set the widget default language",
        description="`{widget_default_language: auto, ru, en, el, de, es, ar or zh}`; null is refused. The same "
        "write as PATCH /v1/widget/settings with that field (the policy revision moves when the value changes); "
        "purges the served widget cache.",
        request={"application/json": _LANGUAGE_INPUT},
        responses={200: s.LanguageEnvelope},
    )
    def put(self, request):
        data = validate_input(s.LanguageInput, request.data)
        row = services.set_default_language(widget=request.widget, language=data["widget_default_language"])
        return Response({"data": selectors.language_payload(request.widget, row)})


class WidgetSkinsView(ScopedAPIView):
    """GET /v1/widget/skins."""

    route_scopes = {"get": ["widget:read"]}

    @extend_schema(
        summary="Widget skins",
        description="The skin catalogue (values of `widget_skin`); `premium` skins are `available` only on plans "
        "that include them.",
        responses={200: s.SkinListEnvelope},
    )
    def get(self, request):
        return Response({"data": selectors.list_skins(request.widget)})


class WidgetIconsView(ScopedAPIView):
    """GET and POST /v1/widget/icons."""

    route_scopes = {"get": ["widget:read"], "post": ["widget:write"]}
    idempotency_required = {"post"}
    parser_classes = [LimitedMultiPartParser]
    max_body_bytes = ICON_MAX_BYTES + 64 * 1024  # the icon plus multipart framing

    @extend_schema(
        summary="Launcher icon presets",
        description="Preset ids accepted by `icon_preset`. Uploaded icons are `custom:{file_id}`.",
        responses={200: s.IconPresetListEnvelope},
    )
    def get(self, request):
        return Response({"data": selectors.list_icon_presets()})

    @extend_schema(
        summary="Upload a launcher icon",
        description="Multipart `file`: a static PNG (APNG refused), an animated WebP (static WebP refused) or a GIF, "
        f"at most {ICON_MAX_BYTES} bytes. The content is checked structurally and must match the name's extension. "
        "Answers `custom:{file_id}` to send as `icon_preset`; uploading does not change the settings.",
        request={"multipart/form-data": s.IconUploadDoc},
        responses={201: s.IconEnvelope},
    )
    def post(self, request):
        unknown = sorted(set(request.data) - {"file"})
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        upload = single_upload(request, required=True)
        if upload.size > ICON_MAX_BYTES:
            raise serializers.ValidationError({"file": [f"The file exceeds {ICON_MAX_BYTES} bytes."]})
        upload.seek(0)
        content = upload.read()
        icon = services.upload_icon(widget=request.widget, content=content, original_name=upload.name)
        payload = {
            "icon_preset": f"custom:{icon.file_id}",
            "file_id": icon.file_id,
            "icon_format": icon.format,
            "animated": icon.animated,
            "width": icon.width,
            "height": icon.height,
            "size": len(content),
            "url": selectors.icon_url(icon, request.build_absolute_uri),
        }
        return Response({"data": payload}, status=status.HTTP_201_CREATED)


class WidgetEmbedView(ScopedAPIView):
    """GET /v1/widget/embed."""

    route_scopes = {"get": ["widget:read"]}

    @extend_schema(
        summary="Embed snippet",
        description="The script tag to paste into a site: "
        '`<script src="{origin}/static/widget/loader.js?guid={button_guid}" async></script>`.',
        responses={200: s.EmbedEnvelope},
    )
    def get(self, request):
        origin = f"{request.scheme}://{request.get_host()}"
        return Response({"data": selectors.embed_payload(request.widget, origin=origin)})


class WidgetCachePurgeView(ScopedAPIView):
    """POST /v1/widget/cache/purge."""

    route_scopes = {"post": ["widget:write"]}
    idempotency_required = {"post"}
    problem_statuses = {"post": [429]}

    @extend_schema(
        summary="Purge the served widget cache",
        description="No body. The public visitor config is rebuilt on its next read. At most 6 purges per minute per "
        "widget (429 with Retry-After); a refused purge releases its idempotency key.",
        request=None,
        responses={200: s.CachePurgeEnvelope},
    )
    def post(self, request):
        services.request_cache_purge(widget=request.widget)
        return Response({"data": {"purged": True, "widget_id": request.widget.pk}})


class BusinessHoursView(ScopedAPIView):
    """GET and PUT /v1/widget/business-hours."""

    route_scopes = {"get": ["widget:read"], "put": ["widget:write"]}
    idempotency_required = {"put"}

    @extend_schema(
        summary="Business hours",
        description="The widget's week in its time zone, holidays and what the widget does while closed. Before "
        "the first PUT: disabled (always open). While closed the visitor config reads `open: false`, `opens_at` "
        "(the next opening, ISO 8601 with offset; null when none within 14 days) and `online: false`.",
        responses={200: s.BUSINESS_HOURS_ENVELOPE},
    )
    def get(self, request):
        return Response({"data": selectors.get_business_hours(request.widget)})

    @extend_schema(
        summary="Replace the business hours",
        description="The whole resource (every member required, nothing else accepted): `timezone` an IANA name; "
        "`weekly` names all seven days, each with 0..4 intervals `HH:MM` (start before end, `24:00` allowed as "
        "an end, no overlaps); `holidays` at most 100 distinct dates; `outside_hours` `offline_form`, `ai_only` "
        "or `hidden`. Anything else is 422 and nothing is stored. Purges the served widget cache.",
        request={"application/json": s.BUSINESS_HOURS_SCHEMA},
        responses={200: s.BUSINESS_HOURS_ENVELOPE},
    )
    def put(self, request):
        return Response({"data": services.set_business_hours(widget=request.widget, body=request.data)})


class IdentitySecretView(ScopedAPIView):
    """POST /v1/widget/identity-secret."""

    route_scopes = {"post": ["widget:write"]}
    # No Idempotency-Key: a stored answer would keep the secret; a repeated call makes a newer one.

    @extend_schema(
        summary="Make a new identity secret",
        description="No body. A new secret for identity verification (`ChatWidget.setUser`'s `hash`), answered "
        "this once and never shown again. The secret before it stays valid 24 hours (pages already rendered "
        "keep working); any older one ends at once. Audited without the secret.",
        request=None,
        responses={201: s.IdentitySecretDoc},
    )
    def post(self, request):
        refuse_body(request)
        secret, created_at = services.rotate_identity_secret(widget=request.widget)
        return Response(
            {"secret": secret, "created_at": created_at.isoformat()},
            status=status.HTTP_201_CREATED,
            headers={"Cache-Control": "no-store"},
        )

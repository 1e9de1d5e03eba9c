"""Files of the token's widget: upload (multipart `file` or JSON `{url}` fetched through the guarded
client), a redirect to a short-lived signed download URL, and the public download route the signed
token opens.

SECURITY: the client never names the stored path (apps.core.files stores bytes under random
names and keeps the original name only as cleaned display text). The download route takes no bearer token (the
signed, expiring token is the credential) and always serves an attachment with `nosniff`, so an
uploaded HTML or SVG is never rendered from our origin.
"""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse
from django.views.decorators.http import require_safe
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.core.api.parsers import LimitedMultiPartParser, StrictJSONParser
from apps.core.api.serializers import InputSerializer, UploadField
from apps.core.api.views import WidgetScopedViewSet
from apps.core.errors import NotFound, problem_response
from apps.core.files import (
    DEFAULT_CONTENT_TYPE,
    MAX_FILE_BYTES,
    check_upload_size,
    fetch_url,
    single_upload,
    store_file,
)
from apps.core.uploads import protect_upload

from ..contact_input import StrictTextField
from ..models import File
from ..payloads import FILE_URL_MAX_AGE, file_payload, read_file_token, signed_file_url
from ..selectors import not_erasing_file

# --- documentation and inputs ----------------------------------------------------------------------------


class FileDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The file's id (`GET /files/{id}`).")
    name = serializers.CharField(help_text="Original file name, cleaned of paths and control characters.")
    content_type = serializers.CharField(help_text="The file's media type.")
    size = serializers.IntegerField(help_text="Bytes.")
    created_at = serializers.DateTimeField(help_text="When the file was stored.")


class FileMultipartDoc(serializers.Serializer):
    """The multipart alternative of the upload."""

    file = UploadField(content_types=("*/*",), help_text=f"The file, of any type, at most {MAX_FILE_BYTES} bytes.")


class FileUrlInput(InputSerializer):
    """The JSON alternative of the upload: a public https:// URL to fetch."""

    url = StrictTextField(
        max_length=2048,
        help_text=f"Public https:// URL fetched once (one redirect hop), at most {MAX_FILE_BYTES} bytes.",
    )


class FileUploadInput(InputSerializer):
    """Exactly one of `file` (multipart) or `url` (JSON)."""

    file = serializers.FileField(required=False)
    url = StrictTextField(required=False, max_length=2048)

    def validate(self, attrs):
        if ("file" in attrs) == ("url" in attrs):
            raise serializers.ValidationError({"body": ["Send exactly one of multipart `file` or JSON `url`."]})
        return attrs


class _UrlJSONParser(StrictJSONParser):
    """JSON bodies of this view (`{url}`) keep the ordinary API body cap, not the upload cap."""

    def parse(self, stream, media_type=None, parser_context=None):
        return super().parse(stream, media_type, {**(parser_context or {}), "view": None})


# --- views -----------------------------------------------------------------------------------------------


@extend_schema_view(
    create=extend_schema(
        summary="Upload a file",
    ),
    retrieve=extend_schema(
        summary="Download a file",
        description=(
            "Redirects (302) to a short-lived URL of the stored file of this widget. A foreign or unknown id is 404, "
            "and so is a file of a contact whose erasure was accepted (one it uploaded, or one shown only in its "
            "chats), as is its download URL."
        ),
    ),
)
class FileViewSet(WidgetScopedViewSet):
    """Files of the token's widget."""

    queryset = File.objects.all()
    parser_classes = [_UrlJSONParser, LimitedMultiPartParser]
    # A 10 MB file plus multipart framing passes the body gate; the file itself is checked below.
    max_body_bytes = settings.API_FILE_UPLOAD_MAX_BYTES
    route_scopes = {"create": ["files:write"], "retrieve": ["files:read"]}
    idempotency_required = {"create"}
    # The url fetch (up to two hops) runs before the key is claimed, outside any transaction.
    idempotency_deferred = {"create"}
    problem_statuses = {"create": [409]}

    @classmethod
    def tenant_queryset(cls, widget):
        # a file of a contact under erasure reads as missing, as its contact and chats do
        return super().tenant_queryset(widget).filter(not_erasing_file())

    @extend_schema(
        request={"multipart/form-data": FileMultipartDoc, "application/json": FileUrlInput},
        responses={201: FileDoc},
        description="Upload a file: multipart `file` OR JSON `{url}`, exactly one; 10 MB cap.",
    )
    def create(self, request):
        single_upload(request)
        data = self.validated(FileUploadInput)
        upload = data.get("file")
        if upload is not None:
            check_upload_size(upload)
            content, name, content_type, size = upload, upload.name, upload.content_type, upload.size
        else:
            fetched = fetch_url(data["url"])
            content, name, content_type, size = fetched.content, fetched.name, fetched.content_type, fetched.size
        with self.idempotency_claim():
            file = store_file(
                widget=request.widget, content=content, original_name=name, content_type=content_type, size=size
            )
        return Response(_file_output(file), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "Location",
                str,
                location=OpenApiParameter.HEADER,
                response=[302],
                description=f"Signed download URL, valid for {FILE_URL_MAX_AGE} seconds.",
            )
        ],
        responses={302: OpenApiResponse(description="Redirect to the stored file (a short-lived signed URL).")},
    )
    def retrieve(self, request, pk=None):
        file = self.get_object()
        location = signed_file_url(file)
        if location.startswith("/"):
            location = request.build_absolute_uri(location)
        return Response(status=status.HTTP_302_FOUND, headers={"Location": location, "Cache-Control": "no-store"})


def _file_output(file: File) -> dict:
    return {**file_payload(file), "created_at": file.created_at.isoformat()}


@require_safe
def download(request, token: str):
    """The bytes behind a signed file token; an invalid, expired or orphaned token is 404, and so is
    a token of a file of a contact under erasure (signed before the erasure was accepted)."""
    claims = read_file_token(token)
    if not isinstance(claims, dict):
        return problem_response(NotFound(), request)
    file = File.objects.filter(pk=claims.get("f"), widget_id=claims.get("w")).filter(not_erasing_file()).first()
    if file is None:
        return problem_response(NotFound(), request)
    try:
        handle = file.stored.open("rb")
    except (OSError, ValueError):
        return problem_response(NotFound(), request)
    response = FileResponse(handle, content_type=file.content_type or DEFAULT_CONTENT_TYPE)
    protect_upload(response, name=file.original_name, attachment=True)
    response["Cache-Control"] = f"private, max-age={FILE_URL_MAX_AGE}"
    return response

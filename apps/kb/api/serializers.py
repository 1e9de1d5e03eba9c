"""Inputs (strict: unknown members are 422; read-only rule members 422 `kb_read_only_field`) and
documentation shapes of the knowledge-base API."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import InputSerializer, StrictCharField, StrictIntegerField, UploadField

from .. import crawler, selectors, services
from ..errors import ReadOnlyField

READ_ONLY_RULE_FIELDS = (
    "id",
    "source_ref",
    "button_id",
    "operator_id",
    "chunk_index",
    "regenerates",
    "created_at",
    "updated_at",
)


class RuleContentField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=services.CONTENT_MAX_CHARS, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("Must not contain NUL characters.")
        if not value.strip():
            raise serializers.ValidationError("Must not be blank.")
        return value


class RuleInput(InputSerializer):
    """`content` (1..4000 characters, required on create) and `doc_id` (up to 200 characters or
    null). Any read-only rule field is refused by name with 422 `kb_read_only_field`."""

    content = RuleContentField()
    doc_id = StrictCharField(max_length=services.DOC_ID_MAX_CHARS, allow_null=True, required=False)

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            sent = sorted(name for name in data if name in READ_ONLY_RULE_FIELDS)
            if sent:
                raise ReadOnlyField(
                    f"Read-only fields cannot be written: {', '.join(sent)}. Send only content and doc_id.",
                    errors={name: ["Read-only field; send only content and doc_id."] for name in sent},
                )
        value = super().to_internal_value(data)
        if self.partial and not value:
            raise serializers.ValidationError({"non_field_errors": ["Send content or doc_id."]})
        return value


class RuleListQuery(InputSerializer):
    source_ref = StrictCharField(max_length=600, required=False, help_text="Only the rules of this source.")


class SourceDeleteQuery(InputSerializer):
    source_ref = StrictCharField(max_length=600, help_text="The source whose rules are deleted (required).")


class SearchQuery(InputSerializer):
    q = StrictCharField(max_length=1000, help_text="The question, 1 to 1000 characters (not blank).")
    limit = serializers.IntegerField(
        min_value=1, max_value=selectors.MAX_SEARCH_LIMIT, required=False, help_text="1 to 20, default 5."
    )
    assistant_id = IdQueryField(required=False, help_text="Preview as this assistant (404 when not the widget's).")

    def validate_q(self, value):
        if not value.strip():
            raise serializers.ValidationError("Must not be blank.")
        return value


class EmptyQuery(InputSerializer):
    """No parameters."""


class RuleDoc(serializers.Serializer):
    id = serializers.IntegerField()
    content = serializers.CharField()
    doc_id = serializers.CharField(allow_null=True)
    source_ref = serializers.CharField(help_text="`manual:<id>`, `upload:<id>` or `crawl:<url>`.")
    button_id = serializers.CharField(allow_null=True)
    operator_id = serializers.IntegerField(allow_null=True)
    chunk_index = serializers.IntegerField()
    regenerates = serializers.BooleanField(help_text="True for upload and crawl sources.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SourceDoc(serializers.Serializer):
    source_ref = serializers.CharField()
    kind = serializers.ChoiceField(choices=["manual", "upload", "crawl"])
    chunk_count = serializers.IntegerField()
    regenerates = serializers.BooleanField()
    updated_at = serializers.DateTimeField()


class DeletedDoc(serializers.Serializer):
    deleted = serializers.IntegerField(help_text="Rules deleted (0 for an unknown source).")


class HitDoc(RuleDoc):
    score = serializers.FloatField(help_text="Reciprocal-rank-fusion score; higher is better.")
    similarity = serializers.FloatField(allow_null=True, help_text="Cosine similarity of the vectors, if ranked.")


class SearchDoc(serializers.Serializer):
    data = HitDoc(many=True)
    mode = serializers.ChoiceField(choices=["hybrid", "keyword", "empty"])
    embedding_model = serializers.CharField(allow_null=True)
    assistant_id = serializers.IntegerField(allow_null=True)
    rag_enabled = serializers.BooleanField(allow_null=True, help_text="The assistant's switch, when one is named.")


class AssistantStatusDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    is_default = serializers.BooleanField()
    rag_enabled = serializers.BooleanField()
    in_use = serializers.BooleanField()


class StatusDoc(serializers.Serializer):
    indexed = serializers.BooleanField()
    in_use = serializers.BooleanField()
    ai_enabled = serializers.BooleanField()
    chunks = serializers.IntegerField()
    embedded_chunks = serializers.IntegerField()
    stale_chunks = serializers.IntegerField()
    embedding_model = serializers.CharField(allow_null=True)
    can_embed = serializers.BooleanField()
    documents = serializers.DictField(child=serializers.IntegerField())
    assistants = AssistantStatusDoc(many=True)


class DocumentErrorDoc(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=[
            "extraction_failed",
            "file_missing",
            "empty_document",
            "too_many_chunks",
            "embed_provider_failed",
            "worker_lost",
        ]
    )
    detail = serializers.CharField()


class DocumentDoc(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    format = serializers.ChoiceField(choices=["txt", "md", "html", "csv", "json", "pdf", "docx", "odt"])
    size = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["queued", "processing", "ready", "failed"])
    error = DocumentErrorDoc(allow_null=True)
    chunk_count = serializers.IntegerField()
    characters = serializers.IntegerField()
    source_ref = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DocumentDeletedDoc(serializers.Serializer):
    deleted_chunks = serializers.IntegerField()


class UploadMultipartDoc(serializers.Serializer):
    file = UploadField(
        content_types=(
            "text/plain",
            "text/markdown",
            "text/html",
            "text/csv",
            "application/json",
            "application/pdf",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.oasis.opendocument.text",
        ),
        help_text="One document, at most 10 MB; its format is read from its bytes.",
    )


class SourcePageDoc(serializers.Serializer):
    data = SourceDoc(many=True)
    next_cursor = serializers.CharField(allow_null=True)


# --- crawler ----------------------------------------------------------------------------------------------


class StartUrlField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=crawler.MAX_URL_CHARS, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if urlsplit(value).scheme.lower() != "https" or crawler.normalise(value) is None:
            raise serializers.ValidationError("Must be an absolute https URL without credentials.")
        return value


class GlobField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=200, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.startswith(("/", "*")):
            raise serializers.ValidationError("A glob over the URL's path and query: it starts with `/` or `*`.")
        return value


class CrawlerInput(InputSerializer):
    """The whole crawler configuration (PUT replaces it; omitted optional members take their
    defaults)."""

    start_urls = serializers.ListField(
        child=StartUrlField(),
        min_length=1,
        max_length=10,
        help_text="1 to 10 https URLs; the crawl stays on their hosts.",
    )
    include = serializers.ListField(
        child=GlobField(),
        max_length=50,
        required=False,
        default=list,
        help_text="Globs over path and query; empty: all.",
    )
    exclude = serializers.ListField(child=GlobField(), max_length=50, required=False, default=list)
    max_pages = StrictIntegerField(min_value=1, max_value=1000, required=False, default=100)
    max_depth = StrictIntegerField(min_value=0, max_value=5, required=False, default=3)
    schedule = serializers.ChoiceField(choices=["manual", "daily", "weekly"], required=False, default="manual")

    def validate_start_urls(self, value):
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Start URLs must be distinct.")
        return value


class CrawlerWriteQuery(InputSerializer):
    cancel_running = serializers.ChoiceField(
        choices=["true", "false"],
        required=False,
        help_text="`true`: a crawl running now is cancelled by this write (it stops before its next page); "
        "without it such a write is 409 `kb_crawl_running`.",
    )


class CrawlerConfigDoc(serializers.Serializer):
    start_urls = serializers.ListField(child=serializers.CharField())
    include = serializers.ListField(child=serializers.CharField())
    exclude = serializers.ListField(child=serializers.CharField())
    max_pages = serializers.IntegerField()
    max_depth = serializers.IntegerField()
    schedule = serializers.ChoiceField(choices=["manual", "daily", "weekly"])
    updated_at = serializers.DateTimeField()


class CrawlFailureDoc(serializers.Serializer):
    url = serializers.CharField()
    error = serializers.CharField(
        help_text="`address_not_allowed` (a redirect or URL to a private address, refused), `redirect_off_site`, "
        "`redirect_disallowed`, `too_many_redirects`, `http_<status>`, `timeout`, `connection_error`, `tls_error`, "
        "`response_too_large`, `no_text`, `embed_provider_failed`, ..."
    )


class CrawlRunDoc(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "finished", "failed", "cancelled"])
    trigger = serializers.ChoiceField(choices=["put", "schedule"])
    pages_fetched = serializers.IntegerField(help_text="HTML pages answered 200.")
    pages_indexed = serializers.IntegerField(help_text="New or changed pages, chunked and embedded.")
    pages_unchanged = serializers.IntegerField(help_text="Skipped by fingerprint: same text, not embedded again.")
    pages_failed = serializers.IntegerField()
    pages_retired = serializers.IntegerField(help_text="Pages gone (404/410, no longer linked): rules deleted.")
    pages_disallowed = serializers.IntegerField(help_text="Not fetched: robots.txt disallows them.")
    failures = CrawlFailureDoc(many=True, help_text="The first 50 failed pages.")
    error = serializers.CharField(
        allow_null=True, help_text="`replaced` (cancelled), `worker_lost`, `internal_error` (failed)."
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class CrawlerDoc(serializers.Serializer):
    config = CrawlerConfigDoc(allow_null=True, help_text="null: no crawler configured.")
    current_run = CrawlRunDoc(allow_null=True, help_text="The queued or running crawl.")
    last_run = CrawlRunDoc(allow_null=True, help_text="The last crawl that ended.")

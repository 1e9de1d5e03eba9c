"""Inputs (strict: unknown members are 422; read-only rule members 422 `kb_read_only_field`) and
documentation shapes of the knowledge-base API."""

from __future__ import annotations

from collections.abc import Mapping

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

    content = RuleContentField(help_text="The rule's text.")
    doc_id = StrictCharField(
        max_length=services.DOC_ID_MAX_CHARS,
        allow_null=True,
        required=False,
        help_text="Your id of the document the rule belongs to, up to 200 characters; optional.",
    )

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
    id = serializers.IntegerField(help_text="The rule's id.")
    content = serializers.CharField(help_text="The rule's text.")
    doc_id = serializers.CharField(
        allow_null=True, help_text="Your id of the document the rule belongs to; null when none."
    )
    source_ref = serializers.CharField(help_text="`manual:<id>`, `upload:<id>` or `crawl:<url>`.")
    button_id = serializers.CharField(allow_null=True, help_text="Read-only (422 `kb_read_only_field` if sent).")
    operator_id = serializers.IntegerField(allow_null=True, help_text="Read-only (422 `kb_read_only_field` if sent).")
    chunk_index = serializers.IntegerField(help_text="The chunk's position within its source; read-only.")
    regenerates = serializers.BooleanField(help_text="True for upload and crawl sources.")
    created_at = serializers.DateTimeField(help_text="When the rule was created.")
    updated_at = serializers.DateTimeField(help_text="When the rule was last changed.")


class SourceDoc(serializers.Serializer):
    source_ref = serializers.CharField(help_text="`manual:<id>`, `upload:<id>` or `crawl:<url>`.")
    kind = serializers.ChoiceField(choices=["manual", "upload", "crawl"], help_text="`manual`, `upload` or `crawl`.")
    chunk_count = serializers.IntegerField(help_text="How many rules the source holds.")
    regenerates = serializers.BooleanField(help_text="True for upload and crawl sources.")
    updated_at = serializers.DateTimeField(help_text="When the source's rules last changed.")


class DeletedDoc(serializers.Serializer):
    deleted = serializers.IntegerField(help_text="Rules deleted (0 for an unknown source).")


class HitDoc(RuleDoc):
    score = serializers.FloatField(help_text="Reciprocal-rank-fusion score; higher is better.")
    similarity = serializers.FloatField(allow_null=True, help_text="Cosine similarity of the vectors, if ranked.")


class SearchDoc(serializers.Serializer):
    data = HitDoc(many=True, help_text="The matching rules, best first, each with its `score`.")
    mode = serializers.ChoiceField(choices=["hybrid", "keyword", "empty"], help_text="`hybrid`, `keyword` or `empty`.")
    embedding_model = serializers.CharField(allow_null=True, help_text="The embedding model used; null when none was.")
    assistant_id = serializers.IntegerField(
        allow_null=True, help_text="The assistant the search previewed; null when none was named."
    )
    rag_enabled = serializers.BooleanField(allow_null=True, help_text="The assistant's switch, when one is named.")


class AssistantStatusDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The assistant's id.")
    name = serializers.CharField(help_text="The assistant's name.")
    enabled = serializers.BooleanField(help_text="True when the assistant is enabled.")
    is_default = serializers.BooleanField(help_text="True for the default assistant.")
    rag_enabled = serializers.BooleanField(help_text="True when the assistant is given the knowledge-base chunks.")
    in_use = serializers.BooleanField(
        help_text=(
            "True when the knowledge base is indexed, AI is on, and this assistant is enabled with `rag_enabled`."
        )
    )


class StatusDoc(serializers.Serializer):
    indexed = serializers.BooleanField(
        help_text=(
            "True when rules exist, every one is embedded with the current embedding model, and no document waits."
        )
    )
    in_use = serializers.BooleanField(help_text="True when some assistant uses the knowledge base (see `assistants`).")
    ai_enabled = serializers.BooleanField(help_text="The widget's AI master switch.")
    chunks = serializers.IntegerField(help_text="How many rules there are.")
    embedded_chunks = serializers.IntegerField(help_text="Rules embedded with the current embedding model.")
    stale_chunks = serializers.IntegerField(help_text="Rules embedded with another model, or not at all.")
    embedding_model = serializers.CharField(
        allow_null=True, help_text="The current embedding model; null when nothing can embed."
    )
    can_embed = serializers.BooleanField(help_text="True when a credential can embed.")
    documents = serializers.DictField(child=serializers.IntegerField(), help_text="Uploaded documents per state.")
    assistants = AssistantStatusDoc(many=True, help_text="Each assistant and whether it uses the knowledge base.")


class DocumentErrorDoc(serializers.Serializer):
    code = serializers.ChoiceField(
        choices=[
            "extraction_failed",
            "file_missing",
            "empty_document",
            "too_many_chunks",
            "embed_provider_failed",
            "worker_lost",
        ],
        help_text="Why ingestion failed.",
    )
    detail = serializers.CharField(help_text="The failure, for people.")


class DocumentDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The document's id.")
    name = serializers.CharField(help_text="The uploaded file's name.")
    format = serializers.ChoiceField(
        choices=["txt", "md", "html", "csv", "json", "pdf", "docx", "odt"],
        help_text="The format read from the file's bytes.",
    )
    size = serializers.IntegerField(help_text="The file's size in bytes.")
    state = serializers.ChoiceField(
        choices=["queued", "processing", "ready", "failed"],
        help_text="`queued`, `processing`, `ready` or `failed` (see `error`).",
    )
    error = DocumentErrorDoc(allow_null=True, help_text="Why ingestion failed; null unless `failed`.")
    chunk_count = serializers.IntegerField(help_text="How many rules the document made.")
    characters = serializers.IntegerField(help_text="How many characters of text were extracted.")
    source_ref = serializers.CharField(help_text="`upload:<id>`: the source of its rules.")
    created_at = serializers.DateTimeField(help_text="When the document was uploaded.")
    updated_at = serializers.DateTimeField(help_text="When the document last changed.")


class DocumentDeletedDoc(serializers.Serializer):
    deleted_chunks = serializers.IntegerField(help_text="How many rules were deleted with the document.")


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
    data = SourceDoc(many=True, help_text="The page's sources.")
    next_cursor = serializers.CharField(allow_null=True, help_text="Opaque cursor of the next page.")


# --- crawler ----------------------------------------------------------------------------------------------


class StartUrlField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=crawler.MAX_URL_CHARS, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if crawler.normalise(value) is None:  # https only; None also for what urlsplit cannot read
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
    exclude = serializers.ListField(
        child=GlobField(),
        max_length=50,
        required=False,
        default=list,
        help_text="Globs over path and query never crawled.",
    )
    max_pages = StrictIntegerField(
        min_value=1,
        max_value=1000,
        required=False,
        default=100,
        help_text="At most this many pages per crawl, 1 to 1000 (default 100).",
    )
    max_depth = StrictIntegerField(
        min_value=0,
        max_value=5,
        required=False,
        default=3,
        help_text="How many links deep from a start URL, 0 to 5 (default 3).",
    )
    schedule = serializers.ChoiceField(
        choices=["manual", "daily", "weekly"],
        required=False,
        default="manual",
        help_text="`manual` (the default), `daily` or `weekly`.",
    )

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
    start_urls = serializers.ListField(
        child=serializers.CharField(), help_text="The https URLs the crawl starts from; it stays on their hosts."
    )
    include = serializers.ListField(
        child=serializers.CharField(), help_text="Globs over path and query that are crawled; empty: all."
    )
    exclude = serializers.ListField(child=serializers.CharField(), help_text="Globs over path and query never crawled.")
    max_pages = serializers.IntegerField(help_text="At most this many pages per crawl.")
    max_depth = serializers.IntegerField(help_text="How many links deep from a start URL.")
    schedule = serializers.ChoiceField(
        choices=["manual", "daily", "weekly"], help_text="`manual`, `daily` or `weekly`."
    )
    updated_at = serializers.DateTimeField(help_text="When the configuration was last saved.")


class CrawlFailureDoc(serializers.Serializer):
    url = serializers.CharField(help_text="The page that failed.")
    error = serializers.CharField(
        help_text="`address_not_allowed` (a redirect or URL to a private address, refused), `redirect_off_site`, "
        "`redirect_disallowed`, `too_many_redirects`, `http_<status>`, `timeout`, `connection_error`, `tls_error`, "
        "`response_too_large`, `no_text`, `embed_provider_failed`, ..."
    )


class CrawlRunDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The crawl's id.")
    status = serializers.ChoiceField(
        choices=["queued", "running", "finished", "failed", "cancelled"],
        help_text="`queued`, `running`, `finished`, `failed` or `cancelled`.",
    )
    trigger = serializers.ChoiceField(
        choices=["put", "schedule"], help_text="`put` (a configuration write) or `schedule`."
    )
    pages_fetched = serializers.IntegerField(help_text="HTML pages answered 200.")
    pages_indexed = serializers.IntegerField(help_text="New or changed pages, chunked and embedded.")
    pages_unchanged = serializers.IntegerField(help_text="Skipped by fingerprint: same text, not embedded again.")
    pages_failed = serializers.IntegerField(help_text="Pages that could not be fetched or read (see `failures`).")
    pages_retired = serializers.IntegerField(help_text="Pages gone (404/410, no longer linked): rules deleted.")
    pages_disallowed = serializers.IntegerField(help_text="Not fetched: robots.txt disallows them.")
    failures = CrawlFailureDoc(many=True, help_text="The first 50 failed pages.")
    error = serializers.CharField(
        allow_null=True, help_text="`replaced` (cancelled), `worker_lost`, `internal_error` (failed)."
    )
    created_at = serializers.DateTimeField(help_text="When the crawl was queued.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When the crawl started; null while queued.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When the crawl ended; null until then.")


class CrawlerDoc(serializers.Serializer):
    config = CrawlerConfigDoc(allow_null=True, help_text="null: no crawler configured.")
    current_run = CrawlRunDoc(allow_null=True, help_text="The queued or running crawl.")
    last_run = CrawlRunDoc(allow_null=True, help_text="The last crawl that ended.")

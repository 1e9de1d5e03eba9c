"""Knowledge-base routes: rules, sources, search, uploads and status. Thin: parse, call one service
or selector, serialize. Rule writes embed before the idempotency claim (a provider call never holds
a transaction), so a 502 `kb_embed_provider_failed` stores nothing and leaves the key unclaimed.
A route that embeds waits on the provider in one of the widget's provider-wait slots and under the
request path's embedding deadline (apps.core.provider_waits): 429 `provider_busy` when the widget's
slots are taken, and past the deadline the route's 502."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from apps.core import provider_waits
from apps.core.api.pagination import CURSOR_PARAMETER, LIMIT_PARAMETER, open_cursor, parse_limit, seal_cursor
from apps.core.api.parsers import LimitedMultiPartParser
from apps.core.api.query import query_data
from apps.core.api.serializers import refuse_query
from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet
from apps.core.errors import NotFound, ValidationFailed
from apps.core.files import single_upload

from .. import hooks, selectors, services
from ..errors import EmbedProviderFailed
from ..models import KbChunk, KbDocument
from . import serializers as s

UPLOAD_BODY_BYTES = services.MAX_FILE_BYTES + 64 * 1024  # the document plus multipart framing


def _embedding_wait(widget):
    return provider_waits.wait(widget.pk, seconds=settings.AI_REQUEST_EMBED_DEADLINE_SECONDS)


class RuleViewSet(
    WidgetScopedViewSet,
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
):
    """Knowledge-base rules (chunks) of the token's widget."""

    queryset = KbChunk.objects.all()
    cursor_ordering = ("-created_at", "-id")
    route_scopes = {
        "list": ["kb:read"],
        "retrieve": ["kb:read"],
        "create": ["kb:write"],
        "partial_update": ["kb:write"],
        "destroy": ["kb:write"],
        "delete_source": ["kb:write"],
    }
    idempotency_required = {"create", "partial_update"}
    idempotency_deferred = {"create", "partial_update"}
    problem_statuses = {
        "list": [400],  # more than 1000 query parameters
        "create": [409, 415, 502],
        "partial_update": [409, 415, 502],
        "delete_source": [422],
    }

    @extend_schema(
        summary="List knowledge-base rules",
        description="Every rule (hand-written and cut from documents), newest first; `source_ref` narrows to one "
        "source. Unknown parameters are 422.",
        parameters=[s.RuleListQuery],
        responses={200: s.RuleDoc(many=True)},
    )
    def list(self, request):
        query = self.validated(s.RuleListQuery, data=query_data(request))
        qs = self.get_queryset()
        if "source_ref" in query:
            qs = qs.filter(source_ref=query["source_ref"])
        page = self.paginate_queryset(qs)
        return self.get_paginated_response([selectors.rule_payload(r) for r in page])

    @extend_schema(
        summary="Write a rule",
        description="A hand-written rule: `content` (1..4000 characters) and optional `doc_id` (up to 200). It is "
        "embedded at once with the widget's embedding credential (the widget-wide one, else the enabled assistants' "
        "own, default first; the backup chain applies) and searchable as soon as this answers; its `source_ref` is "
        "`manual:<id>`. Read-only fields (`source_ref`, `button_id`, `operator_id`, `chunk_index`, ...) are 422 "
        "`kb_read_only_field`. A provider failure (or no credential able to embed, or no answer within the "
        "request's embedding deadline, 5 s by default) is 502 `kb_embed_provider_failed`: nothing is stored and the "
        "idempotency key stays free for a retry. While the widget already waits on its provider in 2 requests "
        "(`AI_REQUEST_PROVIDER_SLOTS`), 429 `provider_busy` with `Retry-After`.",
        request=s.RuleInput,
        responses={201: s.RuleDoc},
    )
    def create(self, request):
        data = self.validated(s.RuleInput)
        with _embedding_wait(request.widget):
            embedded = services.embed_texts(widget=request.widget, texts=[data["content"]])
        with self.idempotency_claim():
            rule = services.create_rule(
                widget=request.widget, content=data["content"], doc_id=data.get("doc_id"), embedded=embedded
            )
        return Response(selectors.rule_payload(rule), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Read a rule",
        description="One rule, with `regenerates` (true when its source, an upload or a crawl, rebuilds its rules).",
        responses={200: s.RuleDoc},
    )
    def retrieve(self, request, pk=None):
        return Response(selectors.rule_payload(self.get_object()))

    @extend_schema(
        summary="Edit a rule",
        description="`content` and/or `doc_id`; a new `content` is embedded again before the change is stored (a "
        "provider failure is 502 `kb_embed_provider_failed` and changes nothing). A rule read by GET cannot be "
        "sent back whole: read-only members are 422 `kb_read_only_field`.",
        request=s.RuleInput,
        responses={200: s.RuleDoc},
    )
    def partial_update(self, request, pk=None):
        rule = self.get_object()
        data = self.validated(s.RuleInput, partial=True)
        embedded = None
        if "content" in data and data["content"] != rule.content:
            with _embedding_wait(request.widget):
                embedded = services.embed_texts(widget=request.widget, texts=[data["content"]])
        with self.idempotency_claim():
            rule = services.update_rule(widget=request.widget, rule=rule, changes=dict(data), embedded=embedded)
        return Response(selectors.rule_payload(rule))

    @extend_schema(
        summary="Delete a rule", description="Removes one rule from retrieval at once.", responses={204: None}
    )
    def destroy(self, request, pk=None):
        services.delete_rule(widget=request.widget, rule=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="kb_rules_delete_source",
        summary="Delete a source's rules",
        description="`?source_ref=` (required, else 422): deletes every rule of that source and answers "
        "`{deleted}` (0 for a source with no rules). An upload's document stays listed with its chunk count at 0.",
        parameters=[s.SourceDeleteQuery],
        request=None,
        responses={200: s.DeletedDoc},
    )
    def delete_source(self, request):
        query = self.validated(s.SourceDeleteQuery, data=query_data(request, skip=()))
        deleted = services.delete_source(widget=request.widget, source_ref=query["source_ref"])
        return Response({"deleted": deleted})


class SourceListView(ScopedAPIView):
    """GET /v1/kb/sources."""

    route_scopes = {"get": ["kb:read"]}
    problem_statuses = {"get": [400]}  # more than 1000 query parameters

    @extend_schema(
        summary="List knowledge-base sources",
        description="Distinct source groups (`manual:<id>`, `upload:<id>`, `crawl:<url>`) in `source_ref` order, "
        "each with its `chunk_count`, `kind` and `regenerates`. Cursor list; unknown parameters are 422.",
        parameters=[CURSOR_PARAMETER, LIMIT_PARAMETER],
        responses={200: s.SourcePageDoc},
    )
    def get(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        limit = parse_limit(request.query_params.get("limit"))
        context = f"cursor:kb-sources:widget:{request.widget.pk}"
        after = None
        raw = request.query_params.get("cursor")
        if raw:
            try:
                values = open_cursor(raw, context=context)
                if len(values) != 1 or not isinstance(values[0], str):
                    raise ValueError
            except ValueError:
                raise ValidationFailed(errors={"cursor": ["Invalid cursor."]}) from None
            after = values[0]
        rows = selectors.sources(request.widget, after=after, limit=limit + 1)
        next_cursor = seal_cursor([rows[limit - 1]["source_ref"]], context=context) if len(rows) > limit else None
        return Response({"data": rows[:limit], "next_cursor": next_cursor})


class SearchView(ScopedAPIView):
    """GET /v1/kb/search."""

    route_scopes = {"get": ["kb:read"]}
    problem_statuses = {"get": [404, 502]}

    @extend_schema(
        summary="Preview retrieval",
        description="Exactly the chunks the bot gets for the question `q` (1..1000 characters), best first: exact "
        "vector similarity over the widget's chunks fused with full-text search (Russian and English stemming "
        "plus exact words) by reciprocal rank fusion. `limit` 1..20 (default 5); `assistant_id` previews as that "
        "assistant (404 when unknown or another widget's) and reports its `rag_enabled`. `mode` is `keyword` when "
        "no credential can embed, `empty` with no rules. An embedding-provider failure (or no answer within the "
        "request's embedding deadline, 5 s by default) is 502 `kb_embed_provider_failed`; while the widget already "
        "waits on its provider in 2 requests (`AI_REQUEST_PROVIDER_SLOTS`), 429 `provider_busy` with `Retry-After`.",
        parameters=[s.SearchQuery],
        responses={200: s.SearchDoc},
    )
    def get(self, request):
        query = self.validated(s.SearchQuery, data=query_data(request, skip=()))
        assistant = None
        if "assistant_id" in query:
            assistant = selectors.find_assistant(request.widget, query["assistant_id"] or 0)
            if assistant is None:
                raise NotFound()
        try:
            with _embedding_wait(request.widget):
                result = selectors.search_chunks(
                    widget=request.widget, question=query["q"], limit=query.get("limit", selectors.DEFAULT_SEARCH_LIMIT)
                )
        except hooks.EmbedError as exc:
            raise EmbedProviderFailed(services.embed_detail(exc)) from None
        data = [
            {**selectors.rule_payload(hit.chunk), "score": hit.score, "similarity": hit.similarity}
            for hit in result.hits
        ]
        return Response(
            {
                "data": data,
                "mode": result.mode,
                "embedding_model": result.embedding_model,
                "assistant_id": assistant.id if assistant else None,
                "rag_enabled": assistant.rag_enabled if assistant else None,
            }
        )


class StatusView(ScopedAPIView):
    """GET /v1/kb/status."""

    route_scopes = {"get": ["kb:read"]}
    problem_statuses = {"get": [422]}

    @extend_schema(
        summary="Knowledge-base status",
        description="`indexed`: rules exist, every one embedded in the vector space the widget embeds in now "
        "(`stale_chunks` counts the others, e.g. after a credential change) and no document is queued or "
        "processing. `in_use`: indexed, the AI switch on, and an enabled assistant with `rag_enabled`; "
        "`assistants` gives the same per assistant. `documents` counts uploads per state. No parameters.",
        responses={200: s.StatusDoc},
    )
    def get(self, request):
        refuse_query(request)
        return Response(selectors.status(request.widget))


class UploadViewSet(WidgetScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin):
    """Uploaded knowledge-base documents of the token's widget."""

    queryset = KbDocument.objects.all()
    cursor_ordering = ("-created_at", "-id")
    parser_classes = [LimitedMultiPartParser]
    max_body_bytes = UPLOAD_BODY_BYTES
    route_scopes = {"list": ["kb:read"], "retrieve": ["kb:read"], "create": ["kb:write"], "destroy": ["kb:write"]}
    idempotency_required = {"create"}
    problem_statuses = {"create": [409], "destroy": [409]}

    @extend_schema(
        summary="List uploaded documents",
        description="Newest first, each with its ingestion `state` (`queued`, `processing`, `ready`, `failed` with "
        "`error`) and `chunk_count`.",
        responses={200: s.DocumentDoc(many=True)},
    )
    def list(self, request):
        self.validated(s.EmptyQuery, data=query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([selectors.document_payload(d) for d in page])

    @extend_schema(
        summary="Upload a document",
        description="Multipart `file`: txt, md, html, csv, json, pdf, docx or odt, at most 10 MB; the format is read "
        "from the bytes, not the name (anything else is 422 `kb_unsupported_document`). Answers 202 with the "
        "document `queued`; a worker extracts the text, cuts it into chunks and embeds them (`processing`, then "
        "`ready` or `failed` with `error.code`: `extraction_failed`, `empty_document`, `too_many_chunks` (over "
        "2000), `embed_provider_failed`, `worker_lost`: its worker died, swept after 15 minutes of silence). At most "
        "200 documents per widget (409 `kb_upload_limit_reached`); the "
        "same bytes twice is 409 `kb_duplicate_document`.",
        request={"multipart/form-data": s.UploadMultipartDoc},
        responses={202: s.DocumentDoc},
    )
    def create(self, request):
        upload = single_upload(request, required=True)
        unknown = sorted(set(request.data.keys()) - {"file"})
        if unknown:
            raise ValidationFailed(errors={name: ["Unknown field."] for name in unknown})
        document = services.create_document(widget=request.widget, upload=upload)
        return Response(selectors.document_payload(document), status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Poll a document", description="One document's ingestion state.", responses={200: s.DocumentDoc}
    )
    def retrieve(self, request, pk=None):
        return Response(selectors.document_payload(self.get_object()))

    @extend_schema(
        summary="Delete a document",
        description="Deletes the document, its stored file and its chunks; answers `{deleted_chunks}`. 409 "
        "`kb_document_processing` while a worker is processing it (a document silent in `processing` for 15 minutes, "
        "whose worker died, may be deleted).",
        request=None,
        responses={200: s.DocumentDeletedDoc},
    )
    def destroy(self, request, pk=None):
        deleted = services.delete_document(widget=request.widget, document=self.get_object())
        return Response({"deleted_chunks": deleted})


class CrawlerView(ScopedAPIView):
    """GET/PUT/DELETE /v1/kb/crawler: the widget's one crawler configuration (no id: a singleton)."""

    route_scopes = {"get": ["kb:read"], "put": ["kb:write"], "delete": ["kb:write"]}
    idempotency_required = {"put"}
    idempotency_deferred = {"put"}
    problem_statuses = {"get": [422], "put": [409, 415], "delete": [409, 422]}

    @extend_schema(
        summary="Read the crawler",
        description="The configuration (`config`, null when none), the queued or running crawl (`current_run`) and "
        "the last crawl that ended (`last_run`): `status` (`queued`, `running`, `finished`, `failed`, `cancelled`), "
        "page counts (fetched, indexed, skipped unchanged by fingerprint, failed, retired, disallowed by robots.txt), "
        "the first 50 failed pages with their error, start and end times and the run's `error`. No parameters.",
        responses={200: s.CrawlerDoc},
    )
    def get(self, request):
        refuse_query(request)
        return Response(selectors.crawler(request.widget))

    @extend_schema(
        summary="Replace the crawler configuration",
        description="The whole configuration: `start_urls` (1..10 distinct https URLs; the crawl stays on their "
        "hosts), "
        "`include` and `exclude` (globs over a URL's path and query, each starting with `/` or `*`; up to 50), "
        "`max_pages` (1..1000, default 100), `max_depth` (0..5, default 3: links followed from the start URLs; "
        "sitemap pages count as depth 1), `schedule` (`manual`, `daily`, `weekly`; default `manual`). A start URL "
        "whose host does not resolve to a public address is 422 at `start_urls`. Saving queues a crawl (answered "
        "in `current_run`); a crawl still queued is cancelled and replaced; while one runs the answer is 409 "
        "`kb_crawl_running`, unless `?cancel_running=true` cancels it. The crawl honours robots.txt (user agent "
        "`ChatWidgetKbCrawler`, then `*`; Crawl-delay "
        "up to 5 s), reads the sitemaps, fetches every URL and redirect hop through the guarded outbound client, "
        "skips pages whose text did not change, and retires the rules (`crawl:<url>`) of pages gone.",
        parameters=[s.CrawlerWriteQuery],
        request=s.CrawlerInput,
        responses={200: s.CrawlerDoc},
    )
    def put(self, request):
        query = self.validated(s.CrawlerWriteQuery, data=query_data(request, skip=()))
        data = self.validated(s.CrawlerInput)
        services.check_start_urls(data["start_urls"])  # resolves names: before the transaction
        with self.idempotency_claim():
            services.replace_crawler(
                widget=request.widget, config=dict(data), cancel_running=query.get("cancel_running") == "true"
            )
        return Response(selectors.crawler(request.widget))

    @extend_schema(
        summary="Remove the crawler configuration",
        description="No more crawls: a queued crawl is cancelled; while one runs the answer is 409 "
        "`kb_crawl_running`, unless `?cancel_running=true` cancels it (it stops before its next page). The rules "
        "already crawled stay searchable (delete them by source with `DELETE /v1/kb/rules?source_ref=crawl:<url>`). "
        "204 also when nothing was configured.",
        parameters=[s.CrawlerWriteQuery],
        request=None,
        responses={204: None},
    )
    def delete(self, request):
        query = self.validated(s.CrawlerWriteQuery, data=query_data(request, skip=()))
        services.delete_crawler(widget=request.widget, cancel_running=query.get("cancel_running") == "true")
        return Response(status=status.HTTP_204_NO_CONTENT)

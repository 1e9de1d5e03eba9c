"""Billing of the token's widget: balance, transactions, subscriptions and invoices (read-only
records that must match both the widget and its current account), and the account-wide legal
entities (read and write). No endpoint accepts an amount or moves money."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.core.api.views import ScopedAPIView, WidgetScopedViewSet

from .. import selectors, services
from ..models import Invoice, LegalEntity, Subscription, Transaction
from . import serializers as s


@extend_schema_view(
    get=extend_schema(
        summary="Get the account balance",
    ),
)
class BalanceView(ScopedAPIView):
    """The balance of the token's widget (zero when nothing is recorded)."""

    route_scopes = {"get": ["billing:read"]}

    @extend_schema(responses={200: s.BillingBalanceDoc}, description="Money in minor units with `currency` and scale.")
    def get(self, request):
        return Response(s.balance_payload(selectors.get_balance(widget=request.widget)))


class _WidgetRecordViewSet(WidgetScopedViewSet):
    """Records of the token's widget that also name the widget's current account."""

    abstract = True
    lookup_value_regex = r"[0-9]+"

    def scope_queryset(self, queryset):
        return selectors.matching_account(queryset, widget=self.request.widget)


@extend_schema_view(
    list=extend_schema(
        summary="List balance transactions",
        description=(
            "Top-ups, subscription charges, refunds and bonuses of the widget's account, newest first; money in minor "
            "units with `currency`."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a balance transaction",
        description="One transaction of the widget's account. A foreign or unknown id is 404.",
    ),
)
class TransactionViewSet(_WidgetRecordViewSet):
    queryset = Transaction.objects.all()
    route_scopes = {"list": ["billing:read"], "retrieve": ["billing:read"]}

    def scope_queryset(self, queryset):
        return super().scope_queryset(queryset).select_related("invoice")

    @extend_schema(parameters=[s.TransactionListQuery], responses={200: s.BillingTransactionDoc(many=True)})
    def list(self, request):
        query = self.validated(s.TransactionListQuery, data=s.query_data(request))
        queryset = self.get_queryset()
        filters = (("type", Transaction.Type), ("state", Transaction.State), ("direction", Transaction.Direction))
        for field, choices in filters:
            queryset = selectors.filter_slug(queryset, field, query.get(field), choices)
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([s.transaction_payload(t) for t in page])

    @extend_schema(responses={200: s.BillingTransactionDoc})
    def retrieve(self, request, pk=None):
        return Response(s.transaction_payload(self.get_object()))


@extend_schema_view(
    list=extend_schema(
        summary="List product subscriptions",
        description=(
            "Products and packages the widget's account is subscribed to, with status (`trial`, `active`, `past_due`, "
            "`cancelled`, `expired`) and period."
        ),
    ),
    retrieve=extend_schema(
        summary="Get a product subscription",
        description="One product subscription of the widget's account. A foreign or unknown id is 404.",
    ),
)
class SubscriptionViewSet(_WidgetRecordViewSet):
    queryset = Subscription.objects.all()
    route_scopes = {"list": ["billing:read"], "retrieve": ["billing:read"]}

    @extend_schema(parameters=[s.SubscriptionListQuery], responses={200: s.BillingSubscriptionDoc(many=True)})
    def list(self, request):
        query = self.validated(s.SubscriptionListQuery, data=s.query_data(request))
        queryset = selectors.filter_slug(self.get_queryset(), "status", query.get("status"), Subscription.Status)
        queryset = selectors.filter_slug(queryset, "kind", query.get("kind"), Subscription.Kind)
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([s.subscription_payload(x) for x in page])

    @extend_schema(responses={200: s.BillingSubscriptionDoc})
    def retrieve(self, request, pk=None):
        return Response(s.subscription_payload(self.get_object()))


@extend_schema_view(
    list=extend_schema(
        summary="List invoices",
    ),
    retrieve=extend_schema(
        summary="Get an invoice",
    ),
)
class InvoiceViewSet(_WidgetRecordViewSet):
    """Bank-transfer invoices against a legal entity of the account; others are never shown."""

    queryset = Invoice.objects.all()
    route_scopes = {"list": ["billing:read"], "retrieve": ["billing:read"]}

    def scope_queryset(self, queryset):
        queryset = selectors.exposed_invoices(super().scope_queryset(queryset), widget=self.request.widget)
        queryset = queryset.select_related("document")
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("items")
        return queryset

    @extend_schema(parameters=[s.InvoiceListQuery], responses={200: s.BillingInvoiceDoc(many=True)})
    def list(self, request):
        query = self.validated(s.InvoiceListQuery, data=s.query_data(request))
        queryset = selectors.filter_slug(self.get_queryset(), "status", query.get("status"), Invoice.Status)
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response([s.invoice_payload(i) for i in page])

    @extend_schema(
        responses={200: s.BillingInvoiceDetailDoc},
        description="The invoice plus its `items`; `has_document` tells that a document can be downloaded "
        "with GET /v1/files/{document_file_id} (scope files:read).",
    )
    def retrieve(self, request, pk=None):
        return Response(s.invoice_payload(self.get_object(), with_items=True))


@extend_schema_view(
    list=extend_schema(
        summary="List legal entities",
        description=(
            "Legal entities of the token's account: every widget of the account sees and edits the same entities."
        ),
    ),
    create=extend_schema(
        summary="Add a legal entity",
    ),
    retrieve=extend_schema(
        summary="Get a legal entity",
        description="One legal entity of the token's account with its fourteen fields.",
    ),
    partial_update=extend_schema(
        summary="Update a legal entity",
    ),
    destroy=extend_schema(
        summary="Delete a legal entity",
    ),
)
class LegalEntityViewSet(WidgetScopedViewSet):
    """Legal entities of the token's account: every widget of the account sees and edits the same
    entities. Create, update and delete share 10 writes per hour per account."""

    queryset = LegalEntity.objects.all()
    # SECURITY: account-wide rows. `account__widgets` = the token's widget keeps exactly the entities
    # of the account that owns the widget (a widget has one account, so no row repeats).
    tenant_field = "account__widgets"
    lookup_value_regex = r"[0-9]+"
    route_scopes = {
        "list": ["billing:read"],
        "retrieve": ["billing:read"],
        "create": ["billing:write"],
        "partial_update": ["billing:write"],
        "destroy": ["billing:write"],
    }
    idempotency_required = {"create", "partial_update"}
    problem_statuses = {"create": [409, 429], "partial_update": [409, 429], "destroy": [409, 429]}

    @extend_schema(responses={200: s.LegalEntityDoc(many=True)})
    def list(self, request):
        self.validated(s.EmptyQuery, data=s.query_data(request))
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([s.legal_entity_payload(e) for e in page])

    @extend_schema(responses={200: s.LegalEntityDoc})
    def retrieve(self, request, pk=None):
        return Response(s.legal_entity_payload(self.get_object()))

    @extend_schema(
        request=s.LegalEntityInput,
        responses={201: s.LegalEntityDoc},
        description="All fourteen fields are required. `inn` 10 or 12 digits, `kpp` 9, `ogrn` 13 or 15, `bik` 9, "
        "`checking_account` and `correspondent_account` 20, each a JSON string of digits (a number is 422). "
        "At most 10 entity writes per hour per account (429 with Retry-After).",
    )
    def create(self, request):
        data = self.validated(s.LegalEntityInput)
        entity = services.create_legal_entity(account=request.widget.account, fields=dict(data))
        return Response(s.legal_entity_payload(entity), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=s.LegalEntityInput(partial=True),
        responses={200: s.LegalEntityDoc},
        description="Any non-empty subset of the fourteen fields, with the create rules. 409 "
        "entity_locked_by_pending_withdrawal while an unpaid withdrawal names the entity.",
    )
    def partial_update(self, request, pk=None):
        entity = self.get_object()
        data = self.validated(s.LegalEntityInput, partial=True)
        if not data:
            raise serializers.ValidationError({"body": ["Send at least one field to change."]})
        entity = services.update_legal_entity(account=request.widget.account, entity=entity, changes=dict(data))
        return Response(s.legal_entity_payload(entity))

    @extend_schema(
        request=None,
        responses={204: None},
        description="409 entity_locked_by_pending_withdrawal while an unpaid withdrawal names the entity; 409 "
        "entity_referenced_by_financial_record when an invoice or transaction names it.",
    )
    def destroy(self, request, pk=None):
        services.delete_legal_entity(account=request.widget.account, entity=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

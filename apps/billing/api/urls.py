"""Account and billing under /api/v1/."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .account import AccountView
from .views import BalanceView, InvoiceViewSet, LegalEntityViewSet, SubscriptionViewSet, TransactionViewSet

router = ApiRouter()
router.register("billing/transactions", TransactionViewSet, basename="billing-transaction")
router.register("billing/subscriptions", SubscriptionViewSet, basename="billing-subscription")
router.register("billing/invoices", InvoiceViewSet, basename="billing-invoice")
router.register("billing/entities", LegalEntityViewSet, basename="billing-entity")

urlpatterns = [
    re_path(r"^account/?$", AccountView.as_view(), name="account"),
    re_path(r"^billing/balance/?$", BalanceView.as_view(), name="billing-balance"),
    *router.urls,
]

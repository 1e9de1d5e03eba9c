from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .views import EventCatalogueView, SubscriptionViewSet

router = ApiRouter()
router.register("webhook-subscriptions", SubscriptionViewSet, basename="webhook-subscription")

urlpatterns = [re_path(r"^webhook-events/?$", EventCatalogueView.as_view(), name="webhook-events"), *router.urls]

"""Proactive-message routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from apps.core.api.routers import ApiRouter

from .views import ProactiveMessageViewSet

router = ApiRouter()
router.register("proactive-messages", ProactiveMessageViewSet, basename="proactive-message")

urlpatterns = router.urls

"""Routes of the support-agent API under /api/v1/support/."""

from apps.core.api.routers import ApiRouter

from .views import SupportActionViewSet, SupportChatViewSet

router = ApiRouter()
router.register("support/chats", SupportChatViewSet, basename="support-chat")
router.register("support/actions", SupportActionViewSet, basename="support-action")

urlpatterns = [*router.urls]

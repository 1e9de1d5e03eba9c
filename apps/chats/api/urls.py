from apps.core.api.routers import ApiRouter

from .views import ChatViewSet

router = ApiRouter()
router.register("chats", ChatViewSet, basename="chat")

urlpatterns = router.urls

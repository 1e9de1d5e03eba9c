from apps.core.api.routers import ApiRouter

from .views import CannedResponseViewSet

router = ApiRouter()
router.register("canned-responses", CannedResponseViewSet, basename="canned-response")

urlpatterns = router.urls

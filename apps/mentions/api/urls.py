from apps.core.api.routers import ApiRouter

from .views import MentionViewSet

router = ApiRouter()
router.register("mentions", MentionViewSet, basename="mention")

urlpatterns = router.urls

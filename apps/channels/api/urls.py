from apps.core.api.routers import ApiRouter

from .views import CustomChannelViewSet

router = ApiRouter()
router.register("channels", CustomChannelViewSet, basename="custom-channel")

urlpatterns = router.urls

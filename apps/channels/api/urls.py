from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .messenger_views import (
    AdCabinetViewSet,
    MessengerDetailView,
    MessengerListView,
    MessengerVerifyView,
    VkCommunityViewSet,
)
from .views import CustomChannelViewSet

router = ApiRouter()
router.register("channels", CustomChannelViewSet, basename="custom-channel")
router.register("messengers/vk/communities", VkCommunityViewSet, basename="vk-community")
router.register("messengers/av/cabinets", AdCabinetViewSet, basename="ad-cabinet")

PROVIDER = r"(?P<provider>[A-Za-z0-9_-]{1,32})"

urlpatterns = [
    *router.urls,  # before the {provider} patterns: messengers/vk/communities is not a provider
    re_path(r"^messengers/?$", MessengerListView.as_view(), name="messengers"),
    re_path(rf"^messengers/{PROVIDER}/verify/?$", MessengerVerifyView.as_view(), name="messenger-verify"),
    re_path(rf"^messengers/{PROVIDER}/?$", MessengerDetailView.as_view(), name="messenger"),
]

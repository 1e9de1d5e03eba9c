from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .views import ExternalOperatorViewSet, ReplyView

router = ApiRouter()
router.register("external-operators", ExternalOperatorViewSet, basename="external-operator")

urlpatterns = [re_path(r"^ai/replies/?$", ReplyView.as_view(), name="ai-replies"), *router.urls]

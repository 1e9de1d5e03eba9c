from apps.core.api.routers import ApiRouter

from .views import AutomationRuleViewSet

router = ApiRouter()
router.register("automation-rules", AutomationRuleViewSet, basename="automation-rule")

urlpatterns = router.urls

from apps.core.api.routers import ApiRouter

from .views import AgentViewSet, DepartmentViewSet, InvitationViewSet

router = ApiRouter()
# Before "agents": agents/invitations must never be read as agents/{id} (ids are digits only too).
router.register("agents/invitations", InvitationViewSet, basename="agent-invitation")
router.register("agents", AgentViewSet, basename="agent")
router.register("departments", DepartmentViewSet, basename="department")

urlpatterns = router.urls

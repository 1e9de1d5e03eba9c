from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import views

router = ApiRouter()
router.register("ai/learning/cycles", views.CycleViewSet, basename="learning-cycle")
router.register("ai/learning/history", views.HistoryViewSet, basename="learning-history")
router.register("ai/learning/persona-versions", views.PersonaVersionViewSet, basename="learning-version")
router.register("wishes", views.WishViewSet, basename="wish")

urlpatterns = [
    re_path(r"^ai/learning/settings/?$", views.LearningSettingsView.as_view(), name="learning-settings"),
    re_path(r"^ai/learning/kill-switch/?$", views.KillSwitchView.as_view(), name="learning-kill-switch"),
    re_path(r"^ai/learning/tune/?$", views.TuneView.as_view(), name="learning-tune"),
    *router.urls,
]

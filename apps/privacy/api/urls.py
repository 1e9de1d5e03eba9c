"""Data protection routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import views

router = ApiRouter()
router.register("contacts", views.ContactPrivacyViewSet, basename="contact-privacy")
router.register("audit-log", views.AuditLogViewSet, basename="audit-log")

urlpatterns = [
    *router.urls,
    re_path(r"^widget/retention/?$", views.WidgetRetentionView.as_view(), name="widget-retention"),
]

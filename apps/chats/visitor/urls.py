"""Routes relative to /api/visitor/v1/. Paths as written, a trailing slash also accepted."""

from django.urls import re_path

from . import views

_GUID = r"^(?P<button_guid>[^/]+)"

urlpatterns = [
    re_path(_GUID + r"/config/?$", views.ConfigView.as_view(), name="visitor-config"),
    re_path(_GUID + r"/sessions/?$", views.SessionsView.as_view(), name="visitor-sessions"),
    re_path(_GUID + r"/messages/?$", views.MessagesView.as_view(), name="visitor-messages"),
    re_path(_GUID + r"/typing/?$", views.TypingView.as_view(), name="visitor-typing"),
    re_path(_GUID + r"/rating/?$", views.RatingView.as_view(), name="visitor-rating"),
    re_path(_GUID + r"/offline/?$", views.OfflineView.as_view(), name="visitor-offline"),
    re_path(_GUID + r"/files/?$", views.FilesView.as_view(), name="visitor-files"),
    re_path(_GUID + r"/queue/?$", views.QueueView.as_view(), name="visitor-queue"),
    re_path(
        _GUID + r"/proactive/(?P<proactive_id>[0-9]{1,18})/events/?$",
        views.ProactiveEventsView.as_view(),
        name="visitor-proactive-events",
    ),
    re_path(_GUID + r"/prechat/?$", views.PrechatView.as_view(), name="visitor-prechat"),
    re_path(_GUID + r"/identity/?$", views.IdentityView.as_view(), name="visitor-identity"),
    re_path(_GUID + r"/attributes/?$", views.AttributesView.as_view(), name="visitor-attributes"),
]

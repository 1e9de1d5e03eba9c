from django.urls import re_path

from .views import BotView, ChatStatusView, ChatView

# Secrets are 48 hex characters as issued; the pattern takes any path-safe token so an unknown
# one answers the route's own 401/404 (never the router's).
PATH_SEGMENT = r"(?P<{}>[A-Za-z0-9_-]{{1,128}})"

urlpatterns = [
    re_path(r"^bot/" + PATH_SEGMENT.format("token") + r"/?$", BotView.as_view(), name="compat-bot"),
    re_path(
        r"^chat/" + PATH_SEGMENT.format("secret") + r"/status/?$", ChatStatusView.as_view(), name="compat-chat-status"
    ),
    re_path(r"^chat/" + PATH_SEGMENT.format("secret") + r"/?$", ChatView.as_view(), name="compat-chat"),
]

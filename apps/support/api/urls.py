"""Routes of the support-agent API under /api/v1/support/, and the signed application-assistant
endpoints of tickets and account links under /api/v1/ai/assistant/."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .signed import AccountLinkView, AccountRevokeView, TicketIntakeView, TicketStatusView
from .tickets import SupportTicketViewSet
from .views import SupportActionViewSet, SupportChatViewSet

router = ApiRouter()
router.register("support/chats", SupportChatViewSet, basename="support-chat")
router.register("support/actions", SupportActionViewSet, basename="support-action")
router.register("support/tickets", SupportTicketViewSet, basename="support-ticket")

urlpatterns = [
    *router.urls,
    re_path(r"^ai/assistant/tickets/?$", TicketIntakeView.as_view(), name="assistant-tickets"),
    re_path(r"^ai/assistant/tickets/status/?$", TicketStatusView.as_view(), name="assistant-tickets-status"),
    re_path(r"^ai/assistant/account-link/?$", AccountLinkView.as_view(), name="assistant-account-link"),
    re_path(r"^ai/assistant/account-link/revoke/?$", AccountRevokeView.as_view(), name="assistant-account-link-revoke"),
]

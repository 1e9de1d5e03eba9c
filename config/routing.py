"""Websocket routes: visitors (session token, any origin) and operators (Django session)."""

from django.urls import re_path

from apps.agents.consumers import agent_socket_app
from apps.chats.visitor.consumers import VisitorConsumer

websocket_urlpatterns: list = [
    re_path(r"^ws/visitor/(?P<button_guid>[^/]+)/?$", VisitorConsumer.as_asgi()),
    # Operators: Django session login, origin checked against ALLOWED_HOSTS.
    re_path(r"^ws/agent/?$", agent_socket_app()),
]

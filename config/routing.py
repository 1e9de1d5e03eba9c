"""Websocket routes. The agent socket arrives with its issue."""

from django.urls import re_path

from apps.chats.visitor.consumers import VisitorConsumer

websocket_urlpatterns: list = [
    re_path(r"^ws/visitor/(?P<button_guid>[^/]+)/?$", VisitorConsumer.as_asgi()),
]

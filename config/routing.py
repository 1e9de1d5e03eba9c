"""Websocket routes. The visitor and agent sockets arrive with their issues."""

websocket_urlpatterns: list = []

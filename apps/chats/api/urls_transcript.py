from django.urls import re_path

from .transcript import TranscriptViewSet

urlpatterns = [
    re_path(
        r"^chats/(?P<pk>[0-9]+)/transcript/?$",
        TranscriptViewSet.as_view({"get": "retrieve"}),
        name="chat-transcript",
    ),
]

"""Routes of conversations under /api/v1/: chats (and their transcript, their labels), contacts,
tags, labels, files.
The signed public download lives at /api/files/ (urls_download.py)."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .contacts import ContactViewSet, TagListView
from .files import FileViewSet
from .labels import ChatLabelsViewSet, LabelViewSet
from .transcript import TranscriptViewSet
from .views import ChatViewSet

router = ApiRouter()
router.register("chats", ChatViewSet, basename="chat")
router.register("contacts", ContactViewSet, basename="contact")
router.register("files", FileViewSet, basename="file")
router.register("labels", LabelViewSet, basename="label")

urlpatterns = [
    re_path(
        r"^chats/(?P<pk>[0-9]+)/labels/?$",
        ChatLabelsViewSet.as_view({"get": "retrieve", "put": "update"}),
        name="chat-labels",
    ),
    *router.urls,
    re_path(r"^tags/?$", TagListView.as_view(), name="tag-list"),
    re_path(
        r"^chats/(?P<pk>[0-9]+)/transcript/?$",
        TranscriptViewSet.as_view({"get": "retrieve"}),
        name="chat-transcript",
    ),
]

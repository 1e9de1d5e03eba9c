"""Contacts, tags and files under /api/v1/."""

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from .contacts import ContactViewSet, TagListView
from .files import FileViewSet

router = ApiRouter()
router.register("contacts", ContactViewSet, basename="contact")
router.register("files", FileViewSet, basename="file")

urlpatterns = [
    re_path(r"^tags/?$", TagListView.as_view(), name="tag-list"),
    *router.urls,
]

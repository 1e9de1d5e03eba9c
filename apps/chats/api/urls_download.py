"""The public download route, mounted at /api/files/: no bearer token, the signed token is the
credential (see apps.chats.payloads.signed_file_url)."""

from django.urls import path

from .files import download

urlpatterns = [
    path("<str:token>", download, name="file-download"),
]

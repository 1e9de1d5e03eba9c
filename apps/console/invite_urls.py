"""The public invitation page, mounted at /invite/ (outside the API: a Django form with CSRF)."""

from django.urls import re_path

from .invite import accept_invitation_page

urlpatterns = [
    re_path(r"^(?P<token>[A-Za-z0-9_-]{1,128})/?$", accept_invitation_page, name="agent-invite"),
]

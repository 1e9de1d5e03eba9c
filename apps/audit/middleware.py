"""Django admin's writes are audited with the signed-in staff user as their actor."""

from __future__ import annotations

from django.urls import reverse

from . import services


class AdminActorMiddleware:
    """Names the staff user as the audit actor of a request to Django admin. After
    AuthenticationMiddleware; any other request is left alone (its user is never loaded here)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.prefix = None

    def __call__(self, request):
        if self.prefix is None:
            self.prefix = reverse("admin:index")
        if not request.path.startswith(self.prefix):
            return self.get_response(request)
        user = request.user
        if not (user.is_authenticated and user.is_staff):
            return self.get_response(request)
        with services.acting(services.staff_actor(user)):
            return self.get_response(request)

"""Django admin's writes are audited with the signed-in staff user as their actor."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

from . import services


class AdminActorMiddleware:
    """Names the staff user as the audit actor of a request to Django admin. After
    AuthenticationMiddleware; any other request is left alone (its user is never loaded here)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Read per request (Django caches the URL resolver): a URLconf without the admin, such as a
        # test's, has no admin requests at all.
        try:
            prefix = reverse("admin:index", urlconf=getattr(request, "urlconf", None))
        except NoReverseMatch:
            return self.get_response(request)
        if not request.path.startswith(prefix):
            return self.get_response(request)
        user = request.user
        if not (user.is_authenticated and user.is_staff):
            return self.get_response(request)
        with services.acting(services.staff_actor(user)):
            return self.get_response(request)

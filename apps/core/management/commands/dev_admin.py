import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from apps.core.management.base import OperatorCommand

USERNAME = "admin"
EMAIL = "admin@example.com"


class Command(OperatorCommand):
    help = (
        "Development only: make sure a Django admin superuser `admin` exists, give it a new random "
        'password and print {"username", "password", "url"}. Refused with APP_MODE=production.'
    )

    @transaction.atomic
    def handle(self, *args, **options):
        if settings.PRODUCTION:
            self.fail("dev_admin is for development only: in production use `manage.py createsuperuser`")
        User = get_user_model()
        user = User.objects.filter(username=USERNAME).first()
        if user is None:
            user = User.objects.create_user(username=USERNAME, email=EMAIL)
        user.is_staff = user.is_superuser = user.is_active = True
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        self.emit_json({"username": USERNAME, "password": password, "url": "/admin/"})

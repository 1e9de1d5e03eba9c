"""A small OpenID Connect provider for the single sign-on tests (django-oauth-toolkit with OIDC on),
run in its own process by `serve.py`: its own SQLite file, an RS256 key made when it starts, the
people it knows (and whether each e-mail is verified) read from a JSON file."""

import json
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = Path(__file__).resolve().parent
STATE_DIR = Path(os.environ["OIDC_PROVIDER_DIR"])

SECRET_KEY = os.urandom(32).hex()
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.2"]
USE_TZ = True
ROOT_URLCONF = "tests.oidc_provider.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(STATE_DIR / "provider.sqlite3")}}
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [HERE / "templates"]}]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # test speed only
LOGIN_URL = "/accounts/login/"
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True

# name -> {"password", "email", "email_verified"}
PEOPLE = json.loads((STATE_DIR / "people.json").read_text())

_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": _KEY.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode(),
    "SCOPES": {"openid": "OpenID Connect", "email": "The e-mail address"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validators.ClaimsValidator",
    "PKCE_REQUIRED": True,
}
LOGGING = {"version": 1, "disable_existing_loggers": True, "root": {"level": "CRITICAL"}}

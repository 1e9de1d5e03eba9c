"""/console/settings/developers/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

from django.urls import path

from . import identity, views, webhooks

urlpatterns = [
    path("", views.index, name="developers"),
    path("api/", views.api_switch, name="developers-api"),
    path("tokens/", views.issue, name="developers-issue"),
    path("tokens/<int:token_id>/revoke/", views.revoke, name="developers-revoke"),
    path("identity/", identity.index, name="developers-identity"),
    path("identity/mode/", identity.mode, name="developers-identity-mode"),
    path("identity/secret/", identity.rotate, name="developers-identity-secret"),
    path("webhooks/", webhooks.create, name="developers-subscribe"),
    path("webhooks/<int:subscription_id>/", webhooks.detail, name="developers-subscription"),
    path("webhooks/<int:subscription_id>/edit/", webhooks.edit, name="developers-subscription-edit"),
    path("webhooks/<int:subscription_id>/delete/", webhooks.delete, name="developers-subscription-delete"),
    path("webhooks/<int:subscription_id>/rotate/", webhooks.rotate, name="developers-subscription-rotate"),
    path("webhooks/<int:subscription_id>/redeliver/", webhooks.redeliver, name="developers-redeliver"),
]

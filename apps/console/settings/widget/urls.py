"""/console/settings/widget/: the widget builder (appearance, texts, languages, launcher, forms,
ratings, typing preview), its preview page and, in its own module, the business hours."""

from django.urls import include, path

from . import prechat, views

urlpatterns: list = [
    path("", views.builder, name="widget"),
    path("preview/", views.preview, name="widget-preview"),
    path("icons/", views.icon_upload, name="widget-icon-upload"),
    path("icons/<int:file_id>/delete/", views.icon_delete, name="widget-icon-delete"),
    path("hours/", include("apps.console.settings.widget.hours_urls")),
    path("proactive/", include("apps.console.settings.widget.proactive_urls")),
    path("prechat/", prechat.prechat_form, name="widget-prechat"),
]

"""Widget settings routes, relative to /api/v1/ (a trailing slash is also accepted)."""

from django.urls import re_path

from . import views

urlpatterns = [
    re_path(r"^widget/settings/?$", views.WidgetSettingsView.as_view(), name="widget-settings"),
    re_path(r"^widget/settings/schema/?$", views.WidgetSettingsSchemaView.as_view(), name="widget-settings-schema"),
    re_path(r"^widget/language/?$", views.WidgetLanguageView.as_view(), name="widget-language"),
    re_path(r"^widget/skins/?$", views.WidgetSkinsView.as_view(), name="widget-skins"),
    re_path(r"^widget/icons/?$", views.WidgetIconsView.as_view(), name="widget-icons"),
    re_path(r"^widget/embed/?$", views.WidgetEmbedView.as_view(), name="widget-embed"),
    re_path(r"^widget/cache/purge/?$", views.WidgetCachePurgeView.as_view(), name="widget-cache-purge"),
    re_path(r"^widget/identity-secret/?$", views.IdentitySecretView.as_view(), name="widget-identity-secret"),
    re_path(r"^widget/business-hours/?$", views.BusinessHoursView.as_view(), name="widget-business-hours"),
]

"""/console/settings/channels/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

from django.urls import path

from . import custom, views

urlpatterns = [
    path("", views.index, name="channels"),
    path("messengers/<provider>/connect/", views.connect, name="channels-connect"),
    path("messengers/<provider>/verify/", views.verify, name="channels-verify"),
    path("messengers/<provider>/disconnect/", views.disconnect, name="channels-disconnect"),
    path("vk/", views.connect_community, name="channels-vk"),
    path("vk/<int:community_id>/primary/", views.primary_community, name="channels-vk-primary"),
    path("vk/<int:community_id>/delete/", views.delete_community, name="channels-vk-delete"),
    path("custom/", custom.create, name="channels-custom-create"),
    path("custom/<int:channel_id>/", custom.detail, name="channels-custom"),
    path("custom/<int:channel_id>/edit/", custom.edit, name="channels-custom-edit"),
    path("custom/<int:channel_id>/switch/", custom.switch, name="channels-custom-switch"),
    path("custom/<int:channel_id>/delete/", custom.delete, name="channels-custom-delete"),
]

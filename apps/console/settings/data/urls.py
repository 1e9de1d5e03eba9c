"""/console/settings/data/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

from django.urls import path, re_path

from . import contacts, views

GUID = r"(?P<guid>[0-9a-f]{1,32})"

urlpatterns = [
    path("", contacts.contact_list, name="data"),
    re_path(rf"^contacts/{GUID}/$", contacts.contact_detail, name="data-contact"),
    re_path(rf"^contacts/{GUID}/edit/$", contacts.edit_contact, name="data-contact-edit"),
    re_path(rf"^contacts/{GUID}/attribute/$", contacts.set_attribute, name="data-contact-attribute"),
    re_path(rf"^contacts/{GUID}/attribute/remove/$", contacts.remove_attribute, name="data-contact-attribute-remove"),
    re_path(rf"^contacts/{GUID}/tags/$", contacts.add_tags, name="data-contact-tags"),
    re_path(rf"^contacts/{GUID}/tags/remove/$", contacts.remove_tag, name="data-contact-untag"),
    re_path(rf"^contacts/{GUID}/export/$", contacts.export, name="data-contact-export"),
    re_path(rf"^contacts/{GUID}/erase/$", contacts.erase, name="data-contact-erase"),
    path("retention/", views.retention, name="data-retention"),
    path("audit/", views.audit_log, name="data-audit"),
]

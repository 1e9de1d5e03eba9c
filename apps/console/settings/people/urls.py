"""/console/settings/people/: the pages of the area (names: the area's slug, then `<slug>-...`)."""

from django.urls import path

from . import departments, routing, sla, views

urlpatterns: list = [
    path("", views.people, name="people"),
    path("invite/", views.invite, name="people-invite"),
    path("invitations/<int:pk>/revoke/", views.revoke_invitation, name="people-invitation-revoke"),
    path("routing/", routing.routing, name="people-routing"),
    path("sla/", sla.index, name="people-sla"),
    path("sla/new/", sla.create, name="people-sla-create"),
    path("sla/<int:pk>/", sla.edit, name="people-sla-edit"),
    path("sla/<int:pk>/delete/", sla.delete, name="people-sla-delete"),
    # before the operator's actions, whose `<action>` would take `capacity`
    path("operators/<int:pk>/capacity/", routing.capacity, name="people-capacity"),
    path(
        "operators/<int:pk>/<str:action>/",
        views.operator_action,
        name="people-operator",
    ),
    path("departments/new/", departments.create, name="people-department-create"),
    path("departments/<int:pk>/", departments.detail, name="people-department"),
    path("departments/<int:pk>/members/", departments.members, name="people-department-members"),
    path("departments/<int:pk>/schedule/", departments.schedule, name="people-department-schedule"),
    path("departments/<int:pk>/delete/", departments.delete, name="people-department-delete"),
]

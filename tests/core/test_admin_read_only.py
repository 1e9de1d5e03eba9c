"""Read-only admin pages (`ReadOnlyAdmin`): rows written elsewhere are added and changed by no staff
user, a superuser included; the trails of access (the audit log, the support log, pending erasures)
(and the agent event log) are never deleted here, and the pages whose rows may go keep Django's delete permission. Viewing
still follows the view (or change) permission."""

import pytest
from django.contrib import admin
from django.test import RequestFactory

from apps.agents.models import AgentEvent
from apps.ai.models import IntegrationBinding
from apps.audit import services as audit
from apps.audit.models import AuditEntry
from apps.core.admin_site import ReadOnlyAdmin
from apps.erasure.models import PendingErasure
from apps.support.models import SupportAction, SupportClaim
from apps.webhooks.models import Delivery
from tests.support.admin import staff_client
from tests.support.factories import UserFactory

pytestmark = pytest.mark.django_db

DELETABLE = {
    AuditEntry: False,
    PendingErasure: False,
    SupportAction: False,
    SupportClaim: True,
    Delivery: True,
    IntegrationBinding: True,
    AgentEvent: False,
}


@pytest.mark.parametrize("model", list(DELETABLE), ids=lambda m: m._meta.label)
def test_a_read_only_page_adds_and_changes_nothing_even_for_a_superuser(model):
    page = admin.site.get_model_admin(model)
    request = RequestFactory().get("/admin/")
    request.user = UserFactory(is_staff=True, is_superuser=True)
    assert isinstance(page, ReadOnlyAdmin)
    assert not page.has_add_permission(request)
    assert not page.has_change_permission(request)
    assert page.has_delete_permission(request) is DELETABLE[model]
    assert page.has_view_permission(request)


def test_a_deletable_read_only_page_still_needs_the_delete_permission():
    request = RequestFactory().get("/admin/")
    request.user = UserFactory(is_staff=True)
    assert not admin.site.get_model_admin(Delivery).has_delete_permission(request)


def test_an_audit_row_is_shown_and_not_changed(widget):
    audit.record_change(
        widget=widget, action="ai_settings.changed", target_type="ai_settings", before={}, after={}, always=True
    )
    row = AuditEntry.objects.get()
    client = staff_client("audit", "view_auditentry", "change_auditentry", "delete_auditentry", account_of=widget)
    assert client.get(f"/admin/audit/auditentry/{row.pk}/change/").status_code == 200
    client.post(f"/admin/audit/auditentry/{row.pk}/change/", {"action": "forged"})
    client.post(f"/admin/audit/auditentry/{row.pk}/delete/", {"post": "yes"})
    row.refresh_from_db()
    assert row.action == "ai_settings.changed"

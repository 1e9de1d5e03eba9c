"""The external operators' lifecycle actions in Django admin take the change permission: a staff
user who may only view them moves nothing."""

import pytest

from apps.external import services
from apps.external.models import Call, ExternalOperator, Probe
from tests.support.admin import staff_client

from .factories import make_operator, visitor_message

pytestmark = pytest.mark.django_db


def _staff(widget, *codenames):
    return staff_client("external", *codenames, account_of=widget)


def _act(client, operator, action):
    return client.post(
        "/admin/external/externaloperator/", {"action": action, "_selected_action": [operator.pk], "index": 0}
    )


@pytest.mark.parametrize("action", ["pause", "revoke"])
def test_a_lifecycle_move_takes_the_change_permission_not_view_alone(widget, settings, action):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    operator = make_operator(widget)
    _act(_staff(widget, "view_externaloperator"), operator, action)
    operator.refresh_from_db()
    assert operator.state == ExternalOperator.State.ACTIVE

    _act(_staff(widget, "view_externaloperator", "change_externaloperator"), operator, action)
    operator.refresh_from_db()
    assert operator.state == {"pause": ExternalOperator.State.PAUSED, "revoke": ExternalOperator.State.REVOKED}[action]


def test_a_name_with_a_bidirectional_control_is_a_form_error_in_admin(widget, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    operator = make_operator(widget, name="Bot")
    client = _staff(widget, "view_externaloperator", "change_externaloperator", "add_externaloperator")
    # renaming
    response = client.post(f"/admin/external/externaloperator/{operator.pk}/change/", {"name": "Bot\u202eevil"})
    assert response.status_code == 200 and "U+202E" in response.content.decode()
    operator.refresh_from_db()
    assert operator.name == "Bot"
    # creating
    response = client.post(
        "/admin/external/externaloperator/add/",
        {"widget": widget.pk, "name": "New\u200bbot", "url": "https://127.0.0.1:9/hook", "state": "active"},
    )
    assert response.status_code == 200 and "U+200B" in response.content.decode()
    assert ExternalOperator.objects.count() == 1


@pytest.mark.parametrize("page", ["call", "probe"])
def test_another_accounts_calls_and_probes_are_not_listed(widget, other_widget, settings, triggers, page):
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    theirs = make_operator(other_widget)
    message = visitor_message(other_widget)
    services.dispatch_visitor_message(chat=message.chat, message=message)
    services.send_probe(widget=other_widget, operator=theirs)
    call, probe = Call.objects.get(operator=theirs), Probe.objects.get(operator=theirs)
    client = _staff(widget, "view_call", "view_probe")
    html = client.get(f"/admin/external/{page}/").content.decode()
    assert str(call.causation_id) not in html and probe.public_id not in html
    row = call if page == "call" else probe
    assert client.get(f"/admin/external/{page}/{row.pk}/change/").status_code == 302  # "does not exist"

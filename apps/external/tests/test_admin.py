"""The external operators' lifecycle actions in Django admin take the change permission: a staff
user who may only view them moves nothing."""

import pytest

from apps.core.testing.admin import staff_client
from apps.external.models import ExternalOperator

from .factories import make_operator

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

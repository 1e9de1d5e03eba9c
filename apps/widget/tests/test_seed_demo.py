"""manage.py seed_demo: the demo widget `make run` shows."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from apps.canned import variables
from apps.widget import selectors


@pytest.mark.django_db
def test_the_demo_widget_has_its_name_as_the_widget_name_setting_once(capsys):
    # `{{widget.name}}` in a canned response is the widget_name setting (product-decisions)
    call_command("seed_demo")
    widget = selectors.get_demo_widget()
    name = selectors.effective_settings(widget)["widget_name"]
    assert name == "Demo widget"
    assert variables.render("Welcome to {{widget.name}}!", {"widget.name": name}) == "Welcome to Demo widget!"

    # an owner's own title survives the next make run
    from apps.widget import services

    services.update_settings(widget=widget, body={"widget_name": "Tea shop"})
    call_command("seed_demo")
    assert selectors.effective_settings(widget)["widget_name"] == "Tea shop"
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["button_guid"] == widget.button_guid

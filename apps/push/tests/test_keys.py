"""`manage.py generate_vapid_keys` prints a pair the sender signs with and a push service accepts."""

from __future__ import annotations

import io

from django.core.management import call_command
from py_vapid import Vapid

from .push_service import unb64url


def test_the_command_prints_a_working_pair_in_the_environment_format():
    out = io.StringIO()
    call_command("generate_vapid_keys", stdout=out)
    lines = dict(line.split("=", 1) for line in out.getvalue().splitlines())
    assert sorted(lines) == ["VAPID_PRIVATE_KEY", "VAPID_PUBLIC_KEY"]
    public = unb64url(lines["VAPID_PUBLIC_KEY"])
    assert len(public) == 65 and public[0] == 4 and len(unb64url(lines["VAPID_PRIVATE_KEY"])) == 32
    signed = Vapid.from_string(lines["VAPID_PRIVATE_KEY"]).sign({"aud": "https://push.example", "sub": "mailto:a@b.c"})
    assert f"k={lines['VAPID_PUBLIC_KEY']}" in signed["Authorization"]
    assert Vapid.verify(signed["Authorization"])


def test_two_runs_make_two_pairs():
    first, second = io.StringIO(), io.StringIO()
    call_command("generate_vapid_keys", stdout=first)
    call_command("generate_vapid_keys", stdout=second)
    assert first.getvalue() != second.getvalue()

"""GET and PATCH /v1/account."""

import pytest

from apps.billing.api.serializers import AccountDoc, LegalEntityDoc, PlanDoc
from apps.billing.tests.conftest import idem
from apps.billing.tests.factories import AccountPlanFactory, LegalEntityFactory, PlanFactory
from apps.core.models import IdempotencyKey
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

ACCOUNT = "/api/v1/account"


def patch(client, body, **headers):
    return client.patch(ACCOUNT, body, format="json", **{**idem(), **headers})


# --- GET ----------------------------------------------------------------------------------------------


def test_get_shows_the_owning_account_profile(api, widget):
    # given
    account = widget.account
    account.name, account.surname, account.phone = "Anna", "Ivanova", "+7 900 000-00-00"
    account.save()
    # when
    body = api(scopes=["account:read"]).get(ACCOUNT).json()
    # then
    assert set(body) == set(AccountDoc().fields)
    assert body["id"] == account.pk and body["email"] == account.user.email
    assert (body["name"], body["surname"], body["phone"]) == ("Anna", "Ivanova", "+7 900 000-00-00")
    assert body["legal_entities"] == [] and body["seats"] == account.seats
    assert body["plan"]["slug"] == "free"  # the default plan of an account with none assigned


def test_get_lists_every_entity_of_the_account_the_sibling_widgets_included(api, widget, sibling_widget):
    # given an entity made through a sibling widget of the same account, and one of another account
    mine = LegalEntityFactory(account=widget.account)
    via_sibling = LegalEntityFactory(account=sibling_widget.account)
    LegalEntityFactory()
    # when
    entities = api(scopes=["account:read"]).get(ACCOUNT).json()["legal_entities"]
    # then
    assert sorted(e["id"] for e in entities) == sorted([mine.pk, via_sibling.pk])
    assert set(entities[0]) == set(LegalEntityDoc().fields)


def test_get_shows_the_plan_and_its_seats(api, widget):
    AccountPlanFactory(account=widget.account, plan=PlanFactory(seats=7), extra_seats=2)
    body = api(scopes=["account:read"]).get(ACCOUNT).json()
    assert set(body["plan"]) == set(PlanDoc().fields)
    assert body["plan"]["seats"] == 7 and body["seats"] == 9


def test_a_token_of_another_account_sees_its_own_account(api, widget, other_widget):
    body = api(scopes=["account:read"], w=other_widget).get(ACCOUNT).json()
    assert body["id"] == other_widget.account_id != widget.account_id


def test_get_without_token_is_401(client):
    assert_problem(client.get(ACCOUNT), 401)


def test_get_needs_account_read(api):
    assert_problem(api(scopes=["account:write", "billing:read"]).get(ACCOUNT), 403, "missing_scope")


# --- PATCH --------------------------------------------------------------------------------------------


def test_patch_changes_only_the_members_sent(api, widget):
    # given
    account = widget.account
    account.name, account.surname, account.phone = "Anna", "Ivanova", "+7 900"
    account.save()
    # when
    response = patch(api(scopes=["account:write"]), {"surname": "Petrova"})
    # then
    assert response.status_code == 200
    account.refresh_from_db()
    assert (account.name, account.surname, account.phone) == ("Anna", "Petrova", "+7 900")
    assert response.json()["surname"] == "Petrova" and set(response.json()) == set(AccountDoc().fields)


def test_null_clears_a_member(api, widget):
    account = widget.account
    account.name, account.phone = "Anna", "+7 900"
    account.save()
    patch(api(), {"name": None, "phone": None})
    account.refresh_from_db()
    assert account.name == "" and account.phone == ""


def test_an_empty_string_clears_too(api, widget):
    account = widget.account
    account.phone = "+7 900"
    account.save()
    assert patch(api(), {"phone": ""}).status_code == 200
    account.refresh_from_db()
    assert account.phone == ""


def test_an_empty_body_changes_nothing(api, widget):
    name = widget.account.name
    assert patch(api(), {}).status_code == 200
    widget.account.refresh_from_db()
    assert widget.account.name == name


def test_names_are_trimmed(api, widget):
    assert patch(api(), {"name": "  Anna  "}).json()["name"] == "Anna"


@pytest.mark.parametrize(
    "phone", ["+7 (495) 123-45-67", "84951234567", "1", "+1", "+" + "1" * 31, "1" * 32, "8 (800) 555 35 35"]
)
def test_valid_phones_are_stored(api, widget, phone):
    assert patch(api(), {"phone": phone}).status_code == 200
    widget.account.refresh_from_db()
    assert widget.account.phone == phone


@pytest.mark.parametrize(
    "phone",
    [
        "1" * 33,
        "+" + "1" * 32,
        "+",
        "++7",
        "(495) 123",
        "-7",
        " 7",
        "7 ext. 12",
        "7\n",
        "7#",
        "٧٧٧",  # non-ASCII digits
        79001234567,
        True,
        ["7"],
    ],
)
def test_a_bad_phone_is_422(api, widget, phone):
    before = widget.account.phone
    body = assert_problem(patch(api(), {"phone": phone}), 422, "validation_failed")
    assert "phone" in body["errors"]
    widget.account.refresh_from_db()
    assert widget.account.phone == before


@pytest.mark.parametrize("member", ["name", "surname"])
@pytest.mark.parametrize(
    "value", ["An\x00na", "An\tna", "An\nna", "Anna\x1b[31m", "An\x7fna", "An\x85na", "An\u2028na"]
)
def test_control_characters_in_names_are_422(api, widget, member, value):
    body = assert_problem(patch(api(), {member: value}), 422)
    assert member in body["errors"]


def test_names_keep_unicode_letters(api, widget):
    assert patch(api(), {"name": "Žofia-Ану ʼО'Брайен", "surname": "李"}).status_code == 200


@pytest.mark.parametrize("member", ["name", "surname"])
def test_a_name_over_150_characters_is_422(api, member):
    assert "errors" in assert_problem(patch(api(), {member: "a" * 151}), 422)


@pytest.mark.parametrize("value", [1, True, ["Anna"], {"first": "Anna"}])
def test_a_name_that_is_not_a_string_is_422(api, value):
    assert_problem(patch(api(), {"name": value}), 422)


@pytest.mark.parametrize(
    "member, value",
    [
        ("email", "new@example.com"),
        ("password", "hunter2hunter2"),
        ("legal_entities", []),
        ("deleted", True),
        ("delete", True),
        ("is_active", False),
        ("id", 5),
        ("seats", 100),
        ("plan", {"slug": "enterprise"}),
        ("created_at", "2020-01-01T00:00:00Z"),
        ("balance_minor", 100),
        ("nickname", "x"),
    ],
)
def test_members_other_than_name_surname_phone_are_refused_by_name(api, widget, member, value):
    # given
    before = (widget.account.name, widget.account.user.email)
    # when
    body = assert_problem(patch(api(), {"name": "Changed", member: value}), 422, "validation_failed")
    # then the member is named and nothing changed, not even the valid member sent beside it
    assert list(body["errors"]) == [member]
    widget.account.refresh_from_db()
    widget.account.user.refresh_from_db()
    assert (widget.account.name, widget.account.user.email) == before


def test_the_refusal_says_why(api):
    errors = assert_problem(patch(api(), {"email": "a@b.c", "password": "x", "legal_entities": []}), 422)["errors"]
    assert "e-mail" in errors["email"][0] and "password" in errors["password"][0]
    assert "/v1/billing/entities" in errors["legal_entities"][0]


def test_a_refused_member_and_a_bad_value_are_both_reported(api):
    errors = assert_problem(patch(api(), {"email": "a@b.c", "phone": "x"}), 422)["errors"]
    assert set(errors) == {"email", "phone"}


def test_a_body_that_is_not_an_object_is_422(api):
    assert_problem(patch(api(), ["name"]), 422)


def test_the_account_cannot_be_deleted(api, widget):
    response = api().delete(ACCOUNT)
    assert_problem(response, 405)
    assert type(widget.account).objects.filter(pk=widget.account_id).exists()


def test_a_name_change_purges_the_cache_of_every_widget_of_the_account(
    api, widget, sibling_widget, other_widget, purges, django_capture_on_commit_callbacks
):
    # when
    with django_capture_on_commit_callbacks(execute=True):
        assert patch(api(), {"name": "New name"}).status_code == 200
    # then: every widget of the account, purged before the answer and again after the commit
    assert sorted(set(purges)) == sorted([widget.pk, sibling_widget.pk])
    assert sorted(purges) == sorted([widget.pk, sibling_widget.pk] * 2)
    assert other_widget.pk not in purges


def test_only_a_name_change_purges(api, widget, purges):
    widget.account.name = "Same"
    widget.account.save()
    patch(api(), {"name": "Same", "surname": "Other", "phone": "+7 1"})
    assert purges == []


def test_patch_needs_an_idempotency_key(api, widget):
    response = api().patch(ACCOUNT, {"name": "X"}, format="json")
    assert_problem(response, 400, "idempotency_key_missing")
    widget.account.refresh_from_db()
    assert widget.account.name != "X"


def test_a_reused_key_is_409(api, widget):
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "account-key"}
    assert client.patch(ACCOUNT, {"name": "One"}, format="json", **key).status_code == 200
    assert_problem(client.patch(ACCOUNT, {"name": "Two"}, format="json", **key), 409, "idempotency_key_reused")
    widget.account.refresh_from_db()
    assert widget.account.name == "One"


def test_a_refused_patch_does_not_burn_the_key(api):
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "account-retry"}
    assert_problem(client.patch(ACCOUNT, {"email": "x@y.z"}, format="json", **key), 422)
    assert not IdempotencyKey.objects.filter(key="account-retry").exists()
    assert client.patch(ACCOUNT, {"name": "Ok"}, format="json", **key).status_code == 200


def test_patch_needs_account_write(api):
    assert_problem(patch(api(scopes=["account:read", "billing:write"]), {"name": "X"}), 403, "missing_scope")


def test_patch_without_token_is_401(client):
    assert_problem(client.patch(ACCOUNT, {"name": "X"}, content_type="application/json", **idem()), 401)


def test_patch_that_is_not_json_is_415(api):
    response = api().patch(ACCOUNT, "name=X", content_type="application/x-www-form-urlencoded", **idem())
    assert_problem(response, 415)


def test_patch_changes_only_the_tokens_account(api, widget):
    stranger = WidgetFactory()
    stranger.account.name = "Stranger"
    stranger.account.save()
    patch(api(), {"name": "Mine"})
    stranger.account.refresh_from_db()
    assert stranger.account.name == "Stranger"

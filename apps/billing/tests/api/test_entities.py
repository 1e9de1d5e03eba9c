"""/v1/billing/entities: account-wide legal entities, their locks and the shared write budget."""

import pytest

from apps.billing.api.serializers import LegalEntityDoc
from apps.billing.models import LegalEntity, Withdrawal
from apps.billing.tests.conftest import idem
from apps.billing.tests.factories import (
    ENTITY_FIELDS,
    InvoiceFactory,
    LegalEntityFactory,
    TransactionFactory,
    WithdrawalFactory,
)
from apps.core.models import IdempotencyKey
from tests.support.factories import WidgetFactory
from tests.support.plugin import assert_problem

pytestmark = pytest.mark.django_db

ENTITIES = "/api/v1/billing/entities"
WRITE = ["billing:write"]
READ = ["billing:read"]
IDENTIFIERS = ("inn", "kpp", "ogrn", "bik", "checking_account", "correspondent_account")
TEXTS = ("short_name", "full_name", "representative", "legal_address", "postal_address", "contact_person", "bank_name")


def url(entity):
    return f"{ENTITIES}/{entity.pk}"


def create(client, body=None, **headers):
    return client.post(ENTITIES, ENTITY_FIELDS if body is None else body, format="json", **{**idem(), **headers})


def update(client, entity, body, **headers):
    return client.patch(url(entity), body, format="json", **{**idem(), **headers})


def with_(**changes):
    return {**ENTITY_FIELDS, **changes}


# --- list and read ----------------------------------------------------------------------------------------------


def test_list_is_account_wide(api, widget, sibling_widget, other_widget):
    # given an entity made through this widget, one through a sibling widget, one of another account
    mine = LegalEntityFactory(account=widget.account)
    via_sibling = LegalEntityFactory(account=sibling_widget.account)
    LegalEntityFactory(account=other_widget.account)
    # when
    response = api(scopes=READ).get(ENTITIES)
    # then: newest first, the sibling's included, the other account's never
    assert [row["id"] for row in response.json()["data"]] == [via_sibling.pk, mine.pk]
    assert set(response.json()["data"][0]) == set(LegalEntityDoc().fields)


def test_a_sibling_widgets_token_sees_the_same_entities(api, widget, sibling_widget):
    entity = LegalEntityFactory(account=widget.account)
    client = api(scopes=READ, w=sibling_widget)
    assert [row["id"] for row in client.get(ENTITIES).json()["data"]] == [entity.pk]
    assert client.get(url(entity)).json()["id"] == entity.pk


def test_read_shows_all_fourteen_fields(api, widget):
    entity = LegalEntityFactory(account=widget.account, **with_(short_name="ООО «Ромашка»"))
    body = api(scopes=READ).get(url(entity)).json()
    assert {k: body[k] for k in ENTITY_FIELDS} == ENTITY_FIELDS
    assert all(isinstance(body[k], str) for k in IDENTIFIERS)


def test_an_entity_of_another_account_is_the_same_404_as_a_missing_one(api, other_widget):
    foreign = LegalEntityFactory(account=other_widget.account)
    client = api(scopes=READ)
    a = assert_problem(client.get(url(foreign)), 404, "not_found")
    b = assert_problem(client.get(f"{ENTITIES}/{foreign.pk + 1000}"), 404, "not_found")
    a.pop("instance"), b.pop("instance")
    assert a == b


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=x", "cursor=forged", "inn=7701234567", "q=a"])
def test_list_refuses_bad_parameters(api, query):
    assert_problem(api(scopes=READ).get(f"{ENTITIES}?{query}"), 422)


def test_list_pages(api, widget):
    made = [LegalEntityFactory(account=widget.account) for _ in range(3)]
    client = api(scopes=READ)
    first = client.get(f"{ENTITIES}?limit=2").json()
    second = client.get(f"{ENTITIES}?limit=2&cursor={first['next_cursor']}").json()
    assert [r["id"] for r in first["data"] + second["data"]] == [e.pk for e in reversed(made)]
    assert second["next_cursor"] is None


def test_reads_need_billing_read(api, widget, client):
    entity = LegalEntityFactory(account=widget.account)
    for path in (ENTITIES, url(entity)):
        assert_problem(api(scopes=["billing:write", "account:read"]).get(path), 403, "missing_scope")
        assert_problem(client.get(path), 401)


# --- create ---------------------------------------------------------------------------------------------------------


def test_create_stores_the_entity_for_the_whole_account(api, widget, sibling_widget):
    # when
    response = create(api(scopes=WRITE))
    # then
    assert response.status_code == 201
    body = response.json()
    assert set(body) == set(LegalEntityDoc().fields) and {k: body[k] for k in ENTITY_FIELDS} == ENTITY_FIELDS
    entity = LegalEntity.objects.get(pk=body["id"])
    assert entity.account_id == widget.account_id
    assert api(scopes=READ, w=sibling_widget).get(url(entity)).status_code == 200


@pytest.mark.parametrize("field", list(ENTITY_FIELDS))
def test_every_field_is_required_on_create(api, field):
    body = {k: v for k, v in ENTITY_FIELDS.items() if k != field}
    errors = assert_problem(create(api(), body), 422, "validation_failed")["errors"]
    assert list(errors) == [field]
    assert not LegalEntity.objects.exists()


def test_an_empty_body_names_all_fourteen(api):
    errors = assert_problem(create(api(), {}), 422)["errors"]
    assert set(errors) == set(ENTITY_FIELDS)


@pytest.mark.parametrize(
    "field, value",
    [
        ("inn", "770123456"),
        ("inn", "77012345678"),
        ("inn", "7701234567890"),
        ("kpp", "77010100"),
        ("kpp", "7701010011"),
        ("ogrn", "102770013219"),
        ("ogrn", "10277001321955"),
        ("ogrn", "1027700132195555"),
        ("bik", "04452522"),
        ("bik", "0445252255"),
        ("checking_account", "4070281090000000000"),
        ("checking_account", "407028109000000000011"),
        ("correspondent_account", "3010181040000000022"),
        ("inn", "77012345a7"),
        ("inn", "7701 34567"),
        ("inn", " 7701234567"),
        ("inn", "7701234567 "),
        ("inn", "7701234567\n"),
        ("inn", "+701234567"),
        ("inn", "-701234567"),
        ("kpp", "７７０１０１００１"),  # full-width digits
        ("bik", "٠٤٤٥٢٥٢٢٥"),  # Arabic-Indic digits
        ("inn", ""),
        ("inn", None),
    ],
)
def test_identifiers_are_digits_of_an_exact_length(api, field, value):
    errors = assert_problem(create(api(), with_(**{field: value})), 422)["errors"]
    assert list(errors) == [field]


@pytest.mark.parametrize("field", IDENTIFIERS)
def test_an_identifier_sent_as_a_json_number_is_422(api, field):
    errors = assert_problem(create(api(), with_(**{field: int(ENTITY_FIELDS[field])})), 422)["errors"]
    assert errors == {field: ["Must be a string."]}


@pytest.mark.parametrize("field, value", [("inn", "770123456789"), ("ogrn", "304500116000157"), ("inn", "0000000000")])
def test_the_other_allowed_lengths_are_accepted(api, field, value):
    assert create(api(), with_(**{field: value})).status_code == 201


@pytest.mark.parametrize("field", TEXTS)
@pytest.mark.parametrize("value", ["", "   ", None, 5, ["a"], "a\x00b", "line\nbreak", "tab\there"])
def test_text_fields_must_be_non_empty_strings_without_control_characters(api, field, value):
    errors = assert_problem(create(api(), with_(**{field: value})), 422)["errors"]
    assert list(errors) == [field]


@pytest.mark.parametrize("field, limit", [("short_name", 255), ("full_name", 500), ("bank_name", 255)])
def test_text_fields_have_a_length_cap(api, field, limit):
    assert create(api(), with_(**{field: "я" * limit})).status_code == 201
    assert_problem(create(api(), with_(**{field: "я" * (limit + 1)})), 422)


@pytest.mark.parametrize("phone", ["", "abc", "+", "1" * 33, "(495) 1", 74951234567])
def test_contact_phone_follows_the_phone_rule(api, phone):
    errors = assert_problem(create(api(), with_(contact_phone=phone)), 422)["errors"]
    assert list(errors) == ["contact_phone"]


@pytest.mark.parametrize(
    "member, value",
    [("id", 1), ("created_at", "2020-01-01T00:00:00Z"), ("account_id", 1), ("amount_minor", 100), ("card_number", "4")],
)
def test_members_beyond_the_fourteen_are_refused_by_name(api, member, value):
    errors = assert_problem(create(api(), with_(**{member: value})), 422)["errors"]
    assert list(errors) == [member]
    assert not LegalEntity.objects.exists()


def test_create_needs_an_idempotency_key(api):
    assert_problem(api().post(ENTITIES, ENTITY_FIELDS, format="json"), 400, "idempotency_key_missing")
    assert not LegalEntity.objects.exists()


def test_a_reused_key_is_409_and_creates_nothing_more(api):
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "entity-once"}
    first = client.post(ENTITIES, ENTITY_FIELDS, format="json", **key)
    body = assert_problem(client.post(ENTITIES, ENTITY_FIELDS, format="json", **key), 409, "idempotency_key_reused")
    assert body["previous"]["resource_id"] == str(first.json()["id"])
    assert LegalEntity.objects.count() == 1


def test_a_refused_create_does_not_burn_the_key(api):
    client = api()
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "entity-retry"}
    assert_problem(client.post(ENTITIES, with_(inn="1"), format="json", **key), 422)
    assert not IdempotencyKey.objects.filter(key="entity-retry").exists()
    assert client.post(ENTITIES, ENTITY_FIELDS, format="json", **key).status_code == 201


def test_create_that_is_not_json_is_415(api):
    assert_problem(api().post(ENTITIES, "inn=1", content_type="text/plain", **idem()), 415)


def test_malformed_json_is_400(api):
    assert_problem(api().post(ENTITIES, "{", content_type="application/json", **idem()), 400, "invalid_json")


def test_create_needs_billing_write(api, client):
    assert_problem(create(api(scopes=["billing:read", "account:write"])), 403, "missing_scope")
    assert_problem(client.post(ENTITIES, ENTITY_FIELDS, content_type="application/json", **idem()), 401)
    assert not LegalEntity.objects.exists()


# --- update ---------------------------------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    response = update(api(scopes=WRITE), entity, {"kpp": "770201001", "bank_name": "АО «Банк»"})
    assert response.status_code == 200
    entity.refresh_from_db()
    assert (entity.kpp, entity.bank_name, entity.inn) == ("770201001", "АО «Банк»", ENTITY_FIELDS["inn"])
    assert response.json()["kpp"] == "770201001"


def test_a_sibling_widget_may_change_the_accounts_entity(api, widget, sibling_widget):
    entity = LegalEntityFactory(account=widget.account)
    assert update(api(scopes=WRITE, w=sibling_widget), entity, {"short_name": "ООО «Лютик»"}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"inn": 7701234567},
        {"inn": "123"},
        {"short_name": None},
        {"short_name": ""},
        {"contact_phone": None},
        {"id": 5},
        {"nickname": "x"},
        {},
        [],
    ],
)
def test_a_bad_patch_is_422_and_changes_nothing(api, widget, body):
    entity = LegalEntityFactory(account=widget.account)
    before = LegalEntity.objects.values().get(pk=entity.pk)
    assert_problem(update(api(), entity, body), 422)
    assert LegalEntity.objects.values().get(pk=entity.pk) == before


def test_patch_of_another_accounts_entity_is_404(api, other_widget):
    foreign = LegalEntityFactory(account=other_widget.account)
    assert_problem(update(api(), foreign, {"kpp": "770201001"}), 404)
    foreign.refresh_from_db()
    assert foreign.kpp == ENTITY_FIELDS["kpp"]


@pytest.mark.parametrize("status", ["pending", "processing", "awaiting_bank"])
def test_patch_is_locked_while_an_unpaid_withdrawal_names_the_entity(api, widget, status):
    # given a withdrawal that is not settled (a status introduced later counts as unsettled)
    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(legal_entity=entity, status=status)
    # when
    body = assert_problem(update(api(), entity, {"kpp": "770201001"}), 409, "entity_locked_by_pending_withdrawal")
    # then
    assert body["type"] == "/api/problems/entity_locked_by_pending_withdrawal"
    entity.refresh_from_db()
    assert entity.kpp == ENTITY_FIELDS["kpp"]


@pytest.mark.parametrize("status", Withdrawal.SETTLED)
def test_a_settled_withdrawal_does_not_lock_a_patch(api, widget, status):
    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(legal_entity=entity, status=status)
    assert update(api(), entity, {"kpp": "770201001"}).status_code == 200


def test_a_withdrawal_naming_another_entity_does_not_lock(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(legal_entity=LegalEntityFactory(account=widget.account))
    assert update(api(), entity, {"kpp": "770201001"}).status_code == 200


def test_patch_needs_an_idempotency_key_and_billing_write(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    assert_problem(api().patch(url(entity), {"kpp": "770201001"}, format="json"), 400, "idempotency_key_missing")
    assert_problem(update(api(scopes=READ), entity, {"kpp": "770201001"}), 403, "missing_scope")


def test_put_is_not_a_route(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    assert_problem(api().put(url(entity), ENTITY_FIELDS, format="json", **idem()), 405)


# --- delete ---------------------------------------------------------------------------------------------------------


def test_delete_removes_the_entity(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    response = api(scopes=WRITE).delete(url(entity))
    assert response.status_code == 204 and response.content == b""
    assert not LegalEntity.objects.filter(pk=entity.pk).exists()


def test_delete_takes_no_idempotency_key(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    assert api().delete(url(entity)).status_code == 204


def test_delete_of_another_accounts_entity_is_404(api, other_widget):
    foreign = LegalEntityFactory(account=other_widget.account)
    assert_problem(api().delete(url(foreign)), 404)
    assert LegalEntity.objects.filter(pk=foreign.pk).exists()


def test_delete_is_locked_while_an_unpaid_withdrawal_names_the_entity(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(legal_entity=entity, status="processing")
    assert_problem(api().delete(url(entity)), 409, "entity_locked_by_pending_withdrawal")
    assert LegalEntity.objects.filter(pk=entity.pk).exists()


@pytest.mark.parametrize("record", ["invoice", "transaction", "invoice_of_sibling", "settled_withdrawal"])
def test_delete_is_refused_while_a_financial_record_names_the_entity(api, widget, sibling_widget, record):
    # given
    entity = LegalEntityFactory(account=widget.account)
    if record == "invoice":
        InvoiceFactory(widget=widget, legal_entity=entity)
    elif record == "transaction":
        TransactionFactory(widget=widget, legal_entity=entity)
    elif record == "invoice_of_sibling":
        InvoiceFactory(widget=sibling_widget, legal_entity=entity)
    else:
        WithdrawalFactory(legal_entity=entity, status=Withdrawal.Status.PAID)
    # when / then
    body = assert_problem(api().delete(url(entity)), 409, "entity_referenced_by_financial_record")
    assert body["type"] == "/api/problems/entity_referenced_by_financial_record"
    assert LegalEntity.objects.filter(pk=entity.pk).exists()


def test_the_withdrawal_lock_is_reported_before_the_reference(api, widget):
    entity = LegalEntityFactory(account=widget.account)
    InvoiceFactory(widget=widget, legal_entity=entity)
    WithdrawalFactory(legal_entity=entity)
    assert_problem(api().delete(url(entity)), 409, "entity_locked_by_pending_withdrawal")


def test_delete_needs_billing_write(api, widget, client):
    entity = LegalEntityFactory(account=widget.account)
    assert_problem(api(scopes=READ).delete(url(entity)), 403, "missing_scope")
    assert_problem(client.delete(url(entity)), 401)
    assert LegalEntity.objects.filter(pk=entity.pk).exists()


# --- the shared write budget: 10 per hour per account ----------------------------------------------------------------


def test_the_eleventh_write_in_an_hour_is_429_and_has_no_effect(api, widget):
    # given ten writes of the three kinds
    client = api()
    made = [create(client).json()["id"] for _ in range(6)]
    for pk in made[:2]:
        assert client.patch(f"{ENTITIES}/{pk}", {"kpp": "770201001"}, format="json", **idem()).status_code == 200
    for pk in made[2:4]:
        assert client.delete(f"{ENTITIES}/{pk}").status_code == 204
    # when / then: create, update and delete are each refused, with Retry-After, and change nothing
    response = create(client)
    assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 3600
    assert_problem(client.patch(f"{ENTITIES}/{made[4]}", {"kpp": "770301001"}, format="json", **idem()), 429)
    assert_problem(client.delete(f"{ENTITIES}/{made[5]}"), 429)
    assert LegalEntity.objects.count() == 4
    assert LegalEntity.objects.get(pk=made[4]).kpp == ENTITY_FIELDS["kpp"]


def test_the_budget_is_shared_by_the_widgets_of_an_account(api, widget, sibling_widget):
    for _ in range(10):
        assert create(api(w=sibling_widget)).status_code == 201
    assert_problem(create(api()), 429)


def test_another_account_has_its_own_budget(api, widget, other_widget):
    for _ in range(10):
        create(api())
    assert create(api(w=other_widget)).status_code == 201


def test_reads_do_not_count(api, widget):
    client = api()
    for _ in range(15):
        client.get(ENTITIES)
    assert create(client).status_code == 201


def test_refused_writes_do_not_count(api, widget):
    # given eleven refused writes (422, 404, 409)
    client = api()
    locked = LegalEntityFactory(account=widget.account)
    WithdrawalFactory(legal_entity=locked)
    for _ in range(5):
        assert_problem(create(client, with_(inn="1")), 422)
        assert_problem(client.delete(url(locked)), 409)
    assert_problem(client.delete(f"{ENTITIES}/999999"), 404)
    # when / then: ten real writes still fit
    for _ in range(10):
        assert create(client).status_code == 201


def test_the_budget_frees_after_an_hour(api, widget, monkeypatch, settings):
    if settings.REDIS_URL:
        pytest.skip("the Redis backend reads the server clock")
    import time as real_time

    from apps.core import ratelimit

    for _ in range(10):
        create(api())
    assert_problem(create(api()), 429)
    start = real_time.time()
    monkeypatch.setattr(ratelimit.time, "time", lambda: start + 3601)
    assert create(api()).status_code == 201


def test_a_429_does_not_burn_the_idempotency_key(api, widget):
    client = api()
    for _ in range(10):
        create(client)
    key = {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": "after-the-limit"}
    assert_problem(client.post(ENTITIES, ENTITY_FIELDS, format="json", **key), 429)
    assert not IdempotencyKey.objects.filter(key="after-the-limit").exists()


def test_a_new_widget_of_the_account_sees_entities_made_before_it(api, widget):
    create(api())
    newcomer = WidgetFactory(account=widget.account)
    assert len(api(scopes=READ, w=newcomer).get(ENTITIES).json()["data"]) == 1

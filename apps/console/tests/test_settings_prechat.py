"""The pre-chat form page (/console/settings/widget/prechat/): draws the stored form, saves through the
settings PATCH service (audited, the owner as actor), refuses in the API's words beside the row it is
about, and changes nothing on a refusal."""

import re
import uuid

import pytest

from apps.audit.models import AuditEntry
from apps.widget import selectors
from apps.widget import services as widget_services

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/widget/prechat/"
SETTINGS = "/api/v1/widget/settings"


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"prechat-{uuid.uuid4().hex}"}


def stored_form(widget) -> dict:
    return selectors.effective_settings(widget)["prechat"]


def errors_of(html: str, input_id: str) -> list[str]:
    """The messages the page shows in the field block of one input."""
    block = re.search(rf'<div class="field[^"]*">\s*<label for="{input_id}".*?</div>', html, re.S)
    assert block, input_id
    return [m.replace("&#x27;", "'") for m in re.findall(r'<p class="error"[^>]*>(.*?)</p>', block.group(0))]


def row(i: int, key: str, type: str = "text", *, en: str = "", required=False, **extra) -> dict:
    data = {f"f{i}-key": key, f"f{i}-type": type, f"f{i}-label-en": en or key.title(), f"f{i}-order": str(i + 1)}
    if required:
        data[f"f{i}-required"] = "1"
    data.update({f"f{i}-{name}": value for name, value in extra.items()})
    return data


def test_the_page_renders_for_the_owner_with_one_empty_field(owner_console):
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="when"' in html and 'name="f0-key"' in html and 'name="f0-label-ar"' in html
    assert 'name="f1-key"' not in html
    assert "settings-prechat.css" in html


def test_the_builder_links_to_the_page(owner_console):
    assert PAGE in owner_console.get("/console/settings/widget/").content.decode()


def test_the_owner_saves_a_form_with_labels_a_select_and_a_consent(owner_console, owner, widget):
    data = {
        "when": "offline",
        **row(0, "name", en="Your name", required=True, **{"label-ar": "اسمك"}),
        **row(1, "plan", "select", options="free\npro", **{"options-en": "Free\nPro", "options-de": "\nProfi"}),
        **row(2, "consent", "checkbox", en="I accept the [privacy policy]", required=True),
    }
    response = owner_console.post(PAGE, data)
    assert response.status_code == 303, response.content.decode()[:2000]
    form = stored_form(widget)
    assert form["when"] == "offline"
    assert form["fields"][0] == {
        "key": "name",
        "type": "text",
        "label_i18n": {"en": "Your name", "ar": "اسمك"},
        "required": True,
    }
    assert form["fields"][1]["options"] == [
        {"value": "free", "label_i18n": {"en": "Free"}},
        {"value": "pro", "label_i18n": {"en": "Pro", "de": "Profi"}},
    ]
    assert form["fields"][2]["required"] is True
    entry = AuditEntry.objects.filter(action="widget_settings.changed").latest("pk")
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    html = owner_console.get(PAGE).content.decode()
    assert "Saved." in html and 'value="اسمك"' in html and 'name="f3-key"' in html


def test_fields_are_reordered_by_position_and_removed(owner_console, widget):
    widget_services.update_settings(
        widget=widget,
        body={
            "prechat": {
                "when": "always",
                "fields": [
                    {"key": "a", "type": "text", "label_i18n": {"en": "A"}},
                    {"key": "b", "type": "text", "label_i18n": {"en": "B"}},
                    {"key": "c", "type": "text", "label_i18n": {"en": "C"}},
                ],
            }
        },
    )
    data = {"when": "always", **row(0, "a"), **row(1, "b"), **row(2, "c", remove="1")}
    data["f0-order"] = "3"
    assert owner_console.post(PAGE, data).status_code == 303
    assert [f["key"] for f in stored_form(widget)["fields"]] == ["b", "a"]


@pytest.mark.parametrize(
    "data, path, input_id",
    [
        ({"when": "always", **row(0, "Bad Key")}, "prechat.fields.0.key", "f0-key"),
        ({"when": "always", **row(0, "a"), **row(1, "a")}, "prechat.fields.1.key", "f1-key"),
        ({"when": "always", **row(0, "email", "text")}, "prechat.fields.0.type", "f0-type"),
        ({"when": "sometimes", **row(0, "a")}, "prechat.when", "prechat-when"),
    ],
)
def test_a_refusal_shows_the_apis_words_beside_the_input_and_changes_nothing(
    owner_console, api, widget, data, path, input_id
):
    body = {"prechat": {"when": data["when"], "fields": []}}
    for i in range(10):
        if f"f{i}-key" in data:
            body["prechat"]["fields"].append(
                {
                    "key": data[f"f{i}-key"],
                    "type": data[f"f{i}-type"],
                    "label_i18n": {"en": data[f"f{i}-label-en"]},
                    "required": False,
                }
            )
    expected = api().patch(SETTINGS, body, format="json", **idem()).json()["errors"][path]
    before = AuditEntry.objects.count()
    response = owner_console.post(PAGE, data)
    assert response.status_code == 422
    assert errors_of(response.content.decode(), input_id) == expected
    assert stored_form(widget) == {"when": "never", "fields": []}
    assert AuditEntry.objects.count() == before


def test_a_label_in_an_unknown_shape_is_named_beside_its_language(owner_console, api, widget):
    data = {"when": "always", **row(0, "a", en="   ")}
    data["f0-label-en"] = "\x07"
    response = owner_console.post(PAGE, data)
    assert response.status_code == 422
    answer = api().patch(
        SETTINGS,
        {"prechat": {"when": "always", "fields": [{"key": "a", "type": "text", "label_i18n": {"en": "\x07"}}]}},
        format="json",
        **idem(),
    )
    assert (
        errors_of(response.content.decode(), "f0-label-en") == answer.json()["errors"]["prechat.fields.0.label_i18n.en"]
    )


def test_a_form_that_shows_without_fields_is_refused_above_the_fields(owner_console, api, widget):
    response = owner_console.post(PAGE, {"when": "always"})
    assert response.status_code == 422
    expected = api().patch(SETTINGS, {"prechat": {"when": "always", "fields": []}}, format="json", **idem())
    assert expected.json()["errors"]["prechat.fields"][0] in response.content.decode()


def test_an_operator_is_refused(console):
    assert console.get(PAGE).status_code == 403
    assert console.post(PAGE, {"when": "never"}).status_code == 403

"""The widget builder (/console/settings/widget/): every writable setting drawn from the schema, each
kind of input saved through the PATCH service (changed fields only), refusals in the API's words, the
starting language through the language route's path, and the preview page framed by the console only."""

import re
import uuid

import pytest

from apps.audit.models import AuditEntry
from apps.widget import selectors
from apps.widget.models import WidgetSettings

pytestmark = pytest.mark.django_db

PAGE = "/console/settings/widget/"
PREVIEW = "/console/settings/widget/preview/"
SETTINGS = "/api/v1/widget/settings"
LANGUAGE = "/api/v1/widget/language"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    """Uploaded icons go to this test's own directory."""
    settings.MEDIA_ROOT = tmp_path


def idem() -> dict:
    return {"HTTP_X_SERVICE_IDEMPOTENCY_KEY": f"builder-{uuid.uuid4().hex}"}


def stored(widget) -> dict:
    row = WidgetSettings.objects.filter(widget=widget).first()
    return dict(row.values) if row else {}


def directives(response) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in response["Content-Security-Policy"].split("; ")}


def errors_under(html: str, input_id: str) -> list[str]:
    """The messages the page shows under one input (its field block)."""
    block = re.search(rf'<div class="field[^"]*">(?:(?!<div class="field).)*?id="{input_id}".*?</div>', html, re.S)
    assert block, input_id
    return [re.sub(r"&#x27;|&#39;", "'", m) for m in re.findall(r'<p class="error">(.*?)</p>', block.group(0))]


# --- drawing -------------------------------------------------------------------------------------------


def test_the_page_draws_an_input_for_every_writable_setting_of_the_schema(owner_console, widget):
    response = owner_console.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    fields = selectors.settings_schema_document(widget)["fields"]
    for name, member in fields.items():
        if member["read_only"] or name == "prechat":  # the pre-chat form has its own page
            assert f'name="{name}"' not in html, name
            continue
        assert re.search(rf'name="{name}(__[a-z0-9_]+)*"', html), name
    # by kind: a colour is text plus a picker, a switch a checkbox, a choice a select, a number a number box
    assert 'type="color"' in html and 'id="id_widget_color_primary"' in html
    assert re.search(r'<input type="checkbox" name="widget_show_rating"', html)
    assert re.search(r'<select name="widget_theme"', html)
    assert re.search(r'<input type="number" name="widget_border_radius"[^>]*min="0"[^>]*max="32"', html)
    assert re.search(r'<textarea name="widget_greeting"', html)
    assert 'name="widget_prechat_fields__1"' in html and 'name="rating_prompt_i18n__de"' in html
    assert 'name="device_profiles__mobile__widget_offset_x"' in html
    assert 'name="widget_text_translations__en__widget_greeting"' in html


def test_a_setting_the_schema_gains_shows_under_advanced_with_its_description(owner_console, widget, monkeypatch):
    real = selectors.settings_schema_document

    def with_new_field(w):
        doc = real(w)
        doc["fields"]["widget_show_confetti"] = {
            **doc["fields"]["widget_show_branding"],
            "description": "Throw confetti when a chat ends.",
        }
        return doc

    monkeypatch.setattr(selectors, "settings_schema_document", with_new_field)
    html = owner_console.get(PAGE).content.decode()
    advanced = html[html.index('id="section-advanced"') : html.index('id="embed-title"')]
    assert 'name="widget_show_confetti"' in advanced and "Throw confetti when a chat ends." in advanced


def test_the_page_groups_settings_as_an_owner_thinks_of_them(owner_console):
    html = owner_console.get(PAGE).content.decode()
    for title in ("Appearance", "Texts and languages", "Chat behaviour", "Advanced"):
        assert f">{title}</h2>" in html
    assert "Main colour" in html and "Greeting" in html and "Questions before the chat" in html


def test_the_page_shows_the_snippet_the_test_page_link_and_the_preview_frame(owner_console, widget):
    html = owner_console.get(PAGE).content.decode()
    assert f"/static/widget/loader.js?guid={widget.button_guid}" in html
    assert 'data-copy="snippet"' in html
    assert f'href="/demo/?guid={widget.button_guid}"' in html
    assert f'src="{PREVIEW}"' in html


def test_the_builder_may_frame_the_console_and_nothing_else(owner_console):
    policy = directives(owner_console.get(PAGE))
    assert policy["frame-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["script-src"] == ["'self'"] and policy["default-src"] == ["'none'"]


# --- saving each kind ----------------------------------------------------------------------------------


def test_saving_sends_only_the_changed_fields_and_audits_the_owner(owner_console, owner, widget):
    # given a page as drawn, with one colour and the greeting changed
    response = owner_console.post(
        PAGE,
        {"widget_color_primary": "#7B1FA2", "widget_greeting": "Hi!\r\nAsk us anything.", "widget_theme": "light"},
    )
    # then
    assert response.status_code == 303 and response.url == PAGE
    assert stored(widget) == {"widget_color_primary": "#7B1FA2", "widget_greeting": "Hi!\nAsk us anything."}
    entry = AuditEntry.objects.get(action="widget_settings.changed")
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))
    assert "Saved." in owner_console.get(PAGE).content.decode()


@pytest.mark.parametrize(
    ("post", "expected"),
    [
        ({"widget_show_branding": "0"}, {"widget_show_branding": False}),
        ({"widget_show_branding": ["0", "on"], "typing_preview": ["0", "on"]}, {"typing_preview": True}),
        ({"widget_font_family": "roboto"}, {"widget_font_family": "roboto"}),
        ({"widget_button_size": "100"}, {"widget_button_size": 100}),
        ({"widget_border_radius": "4"}, {"widget_border_radius": 4}),
        (
            {"widget_privacy_policy_url": "https://example.com/privacy"},
            {"widget_privacy_policy_url": "https://example.com/privacy"},
        ),
        (
            {"widget_prechat_fields__1": "phone", "widget_prechat_fields__2": "", "widget_prechat_fields__3": "name"},
            {"widget_prechat_fields": ["phone", "name"]},
        ),
        ({"widget_supported_languages": ["", "en", "de"]}, {"widget_supported_languages": ["en", "de"]}),
        (
            {"rating_prompt_i18n__en": "How did we do?", "rating_prompt_i18n__de": ""},
            {"rating_prompt_i18n": {"en": "How did we do?"}},
        ),
        (
            {"widget_text_translations__en__widget_name": "Help desk", "widget_text_translations__ru__widget_name": ""},
            {"widget_text_translations": {"en": {"widget_name": "Help desk"}}},
        ),
        (
            {"device_profiles__mobile__widget_offset_x": "4", "device_profiles__mobile__widget_show_button": "0"},
            {"device_profiles": {"mobile": {"widget_offset_x": 4, "widget_show_button": False}}},
        ),
    ],
)
def test_each_kind_of_input_saves_its_json_value(owner_console, widget, post, expected):
    response = owner_console.post(PAGE, post)
    assert response.status_code == 303, response.content.decode()[:2000]
    got = stored(widget)
    for name, value in expected.items():
        assert got[name] == value, name
    assert set(got) == set(expected)


def test_an_emptied_box_removes_the_stored_value(owner_console, widget):
    owner_console.post(PAGE, {"widget_greeting": "Hello"})
    owner_console.post(PAGE, {"widget_greeting": ""})
    assert "widget_greeting" not in stored(widget)


def test_a_device_override_emptied_is_removed_and_others_kept(owner_console, widget):
    owner_console.post(
        PAGE, {"device_profiles__mobile__widget_offset_x": "4", "device_profiles__mobile__widget_offset_y": "8"}
    )
    owner_console.post(
        PAGE, {"device_profiles__mobile__widget_offset_x": "", "device_profiles__mobile__widget_offset_y": "8"}
    )
    assert stored(widget)["device_profiles"] == {"mobile": {"widget_offset_y": 8}}


def test_the_starting_language_goes_through_the_language_route(owner_console, widget, api):
    response = owner_console.post(PAGE, {"widget_default_language": "de"})
    assert response.status_code == 303
    assert api().get(LANGUAGE).json()["data"]["widget_default_language"] == "de"


def test_nothing_changed_writes_nothing(owner_console, widget):
    response = owner_console.post(PAGE, {"widget_theme": "light", "widget_show_rating": ["0", "on"]})
    assert response.status_code == 302
    assert not WidgetSettings.objects.filter(widget=widget).exists()
    assert not AuditEntry.objects.exists()


# --- refusals: the API's words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("post", "body", "input_id"),
    [
        ({"widget_color_primary": "blue"}, {"widget_color_primary": "blue"}, "id_widget_color_primary"),
        ({"widget_border_radius": "40"}, {"widget_border_radius": 40}, "id_widget_border_radius"),
        ({"widget_border_radius": "abc"}, {"widget_border_radius": "abc"}, "id_widget_border_radius"),
        (
            {"widget_privacy_policy_url": "http://x"},
            {"widget_privacy_policy_url": "http://x"},
            "id_widget_privacy_policy_url",
        ),
        ({"widget_skin": "neon"}, {"widget_skin": "neon"}, "id_widget_skin"),
        (
            {"device_profiles__mobile__widget_chat_width": "900"},
            {"device_profiles": {"mobile": {"widget_chat_width": 900}}},
            "id_device_profiles__mobile__widget_chat_width",
        ),
        ({"rating_prompt_i18n__en": " "}, {"rating_prompt_i18n": {"en": " "}}, "id_rating_prompt_i18n__en"),
    ],
)
def test_a_refusal_shows_the_api_messages_for_the_same_input(owner_console, widget, api, post, body, input_id):
    # the API's answer to the same body
    answer = api().patch(SETTINGS, body, format="json", **idem())
    assert answer.status_code == 422
    expected = sorted(m for messages in answer.json()["errors"].values() for m in messages)
    # the page's
    response = owner_console.post(PAGE, post)
    assert response.status_code == 422
    assert sorted(errors_under(response.content.decode(), input_id)) == expected
    assert stored(widget) == {}
    assert not AuditEntry.objects.filter(action="widget_settings.changed").exists()


def test_a_list_refusal_shows_on_the_list_with_the_api_message(owner_console, widget, api):
    answer = api().patch(SETTINGS, {"widget_prechat_fields": []}, format="json", **idem())
    expected = answer.json()["errors"]["widget_prechat_fields"]
    response = owner_console.post(PAGE, {f"widget_prechat_fields__{n}": "" for n in (1, 2, 3)})
    assert response.status_code == 422
    html = response.content.decode()
    block = re.search(r'data-setting="widget_prechat_fields".*?</fieldset>', html, re.S).group(0)
    assert [m.replace("&#x27;", "'") for m in re.findall(r'<p class="error">(.*?)</p>', block)] == expected


def test_a_refusal_changes_nothing_of_the_valid_fields_posted_with_it(owner_console, widget):
    response = owner_console.post(PAGE, {"widget_greeting": "Hello", "widget_border_radius": "99"})
    assert response.status_code == 422
    assert stored(widget) == {}
    # the owner's entries are shown again
    assert "Hello</textarea>" in response.content.decode()


def test_a_bad_language_gets_the_language_route_message(owner_console, widget, api):
    answer = api().put(LANGUAGE, {"widget_default_language": "xx"}, format="json", **idem())
    assert answer.status_code == 422
    response = owner_console.post(PAGE, {"widget_default_language": "xx"})
    assert response.status_code == 422
    expected = sorted(m for messages in answer.json()["errors"].values() for m in messages)
    assert sorted(errors_under(response.content.decode(), "id_widget_default_language")) == expected


# --- the preview page ------------------------------------------------------------------------------------


def test_the_preview_page_loads_the_real_widget_in_preview_mode(owner_console, widget):
    response = owner_console.get(PREVIEW)
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(rf'<script src="/static/widget/loader\.js\?guid={widget.button_guid}" data-preview="1"', html)


def test_the_preview_page_is_framed_by_the_console_only(owner_console):
    response = owner_console.get(PREVIEW)
    assert directives(response)["frame-ancestors"] == ["'self'"]
    assert "frame-src" not in directives(response)
    assert response["X-Frame-Options"] == "SAMEORIGIN"


def test_other_console_pages_stay_unframable(owner_console):
    assert directives(owner_console.get("/console/settings/"))["frame-ancestors"] == ["'none'"]


def test_an_operator_gets_403_on_the_builder_and_its_preview(console, widget):
    assert console.get(PAGE).status_code == 403
    assert console.post(PAGE, {"widget_greeting": "x"}).status_code == 403
    assert console.get(PREVIEW).status_code == 403
    assert stored(widget) == {}


def test_the_preview_shows_the_owners_own_widget(owner_console, owner, other_widget):
    html = owner_console.get(PREVIEW).content.decode()
    assert owner.widget.button_guid in html and other_widget.button_guid not in html


# --- launcher icons ----------------------------------------------------------------------------------------


def test_an_uploaded_icon_is_offered_as_the_launcher_icon_and_can_be_deleted(owner_console, owner, widget):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.widget.models import WidgetIcon
    from apps.widget.tests.images import png

    response = owner_console.post(f"{PAGE}icons/", {"file": SimpleUploadedFile("logo.png", png(), "image/png")})
    assert response.status_code == 303
    icon = WidgetIcon.objects.get(widget=widget)
    assert f'<option value="custom:{icon.file_id}"' in owner_console.get(PAGE).content.decode()
    assert owner_console.post(PAGE, {"icon_preset": f"custom:{icon.file_id}"}).status_code == 303
    assert stored(widget)["icon_preset"] == f"custom:{icon.file_id}"

    response = owner_console.post(f"{PAGE}icons/{icon.file_id}/delete/")
    assert response.status_code == 303
    assert not WidgetIcon.objects.filter(widget=widget).exists()
    entry = AuditEntry.objects.get(action="widget_icon.deleted")
    assert (entry.actor_type, entry.actor_id) == ("agent", str(owner.pk))


def test_a_bad_icon_gets_the_api_message(owner_console, widget, api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.widget.models import WidgetIcon
    from apps.widget.tests.images import png

    answer = api().post(
        "/api/v1/widget/icons",
        {"file": SimpleUploadedFile("logo.gif", png(), "image/gif")},
        format="multipart",
        **idem(),
    )
    assert answer.status_code == 422
    response = owner_console.post(f"{PAGE}icons/", {"file": SimpleUploadedFile("logo.gif", png(), "image/gif")})
    assert response.status_code == 422
    shown = re.search(r'aria-labelledby="icons-title">.*?</section>', response.content.decode(), re.S).group(0)
    for message in answer.json()["errors"]["file"]:
        assert message.replace("'", "&#x27;") in shown
    assert not WidgetIcon.objects.filter(widget=widget).exists()


def test_another_widgets_icon_is_404(owner_console, other_widget):
    from apps.widget import services
    from apps.widget.models import WidgetIcon
    from apps.widget.tests.images import png

    services.upload_icon(widget=other_widget, content=png(), original_name="x.png")

    foreign = WidgetIcon.objects.get(widget=other_widget)
    assert owner_console.post(f"{PAGE}icons/{foreign.file_id}/delete/").status_code == 404
    assert owner_console.post(f"{PAGE}icons/999999/delete/").status_code == 404
    assert WidgetIcon.objects.filter(pk=foreign.pk).exists()

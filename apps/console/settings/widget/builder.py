"""The widget builder's form, drawn from the settings schema document (`GET /v1/widget/settings/schema`)
and read back into the body `PATCH /v1/widget/settings` takes.

Every writable field of the schema gets an input by its kind; the owner's words are in `labels`. The
Django form only draws the inputs: the posted values are read here into JSON values without any
checking of our own (a number box holding "abc" is sent as the string, so the refusal is the API's
own message), and only the fields whose value differs from the effective one go into the body, so
the API's merge rules apply to exactly what the owner changed.

Nested values use `__` in input names: `rating_prompt_i18n__de`,
`widget_text_translations__de__widget_name`, `device_profiles__mobile__widget_offset_x`; an API error
keyed `device_profiles.mobile.widget_offset_x` lands under that input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django import forms

from apps.widget import selectors

from . import labels

SEP = "__"
LANGUAGE = "widget_default_language"  # written through PUT /v1/widget/language's service
UNCHANGED = object()
ORDERED_UP_TO = 3  # an option list this short is edited as positions (its order is what visitors see)
_INTEGER = re.compile(r"-?[0-9]+")


class Checkbox(forms.CheckboxInput):
    """A checkbox posting "0" when cleared (a hidden input of the same name comes first), so a post
    without the input at all leaves the setting as it is."""

    template_name = "console/settings/widget/_checkbox.html"


class Checks(forms.CheckboxSelectMultiple):
    template_name = "console/settings/widget/_checks.html"


class ColorInput(forms.TextInput):
    """The colour as text (#RRGGBB, what is posted) and, once script runs, a colour picker beside it."""

    template_name = "console/settings/widget/_color.html"

    def __init__(self, *, picker_label: str, fallback: str, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.picker_label, self.fallback = picker_label, fallback

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        valid = isinstance(value, str) and re.fullmatch(r"#[0-9A-Fa-f]{6}", value)
        shown = (value if valid else self.fallback).lower()
        context["widget"].update(picker_label=self.picker_label, picker_value=shown)
        return context


# Settings edited on a page of their own (linked from the builder's menu), never posted by the builder.
OWN_PAGES = ("prechat",)


@dataclass
class Item:
    """One setting as the page shows it: one input, or a fieldset of several (`composite`)."""

    name: str
    kind: str
    label: str
    help: str
    inputs: list[str]
    composite: bool = False
    errors: list[str] = field(default_factory=list)
    bound: list = field(default_factory=list)


class Builder:
    def __init__(self, widget) -> None:
        self.widget = widget
        self.fields = {
            name: member
            for name, member in selectors.settings_schema_document(widget)["fields"].items()
            if not member["read_only"] and name not in OWN_PAGES
        }
        self.current = selectors.settings_payload(widget)
        self.icons = selectors.uploaded_icons(widget)
        self.skins = {skin["id"]: skin for skin in selectors.list_skins(widget)}
        self.presets = selectors.list_icon_presets()
        self.form_fields: dict[str, forms.Field] = {}
        self.initial: dict[str, Any] = {}
        self.items = {name: self._item(name, member) for name, member in self.fields.items()}

    # --- drawing -----------------------------------------------------------------------------------------

    def _choices(self, name: str, member: dict, *, inherit: bool = False) -> list[tuple[Any, str]]:
        if member.get("type") == "icon":
            choices = [(p["id"], p["name"]) for p in self.presets]
            choices += [(f"custom:{icon.file_id}", labels.UPLOADED % {"n": icon.file_id}) for icon in self.icons]
        elif name == "widget_skin":
            names = {
                v: skin["name"] if skin["available"] else labels.PAID % {"name": skin["name"]}
                for v, skin in self.skins.items()
            }
            choices = [(value, names.get(value, value)) for value in member["enum"]]
        else:
            choices = [(value, labels.choice_label(name, value)) for value in member["enum"]]
        return [("", labels.INHERIT), *choices] if inherit else choices

    def _input(self, name: str, member: dict, label: str, help_text: str, *, inherit: bool = False) -> forms.Field:
        """The input of one scalar kind; `inherit`: a device override, where empty means "as above"."""
        kind = member["type"]
        attrs: dict[str, Any] = {"data-kind": kind}
        if kind == "boolean" and inherit:
            widget = forms.Select(choices=[("", labels.INHERIT), ("1", labels.ON), ("0", labels.OFF)], attrs=attrs)
            attrs["data-kind"] = "tri"
        elif kind == "boolean":
            widget = Checkbox(attrs=attrs)
        elif kind in ("enum", "integer_enum", "icon"):
            widget = forms.Select(choices=self._choices(name, member, inherit=inherit), attrs=attrs)
        elif kind == "integer":
            widget = forms.NumberInput(attrs={**attrs, "min": member["minimum"], "max": member["maximum"]})
        elif kind == "color":
            attrs["dir"] = "ltr"  # "#RRGGBB" reads left to right in every language
            widget = ColorInput(picker_label=label, fallback=member.get("effective_default") or "#000000", attrs=attrs)
        elif kind == "url":
            widget = forms.URLInput(attrs={**attrs, "maxlength": member.get("max_length"), "dir": "ltr"})
        elif (member.get("max_length") or 0) > 200:
            widget = forms.Textarea(attrs={**attrs, "rows": 3, "maxlength": member["max_length"]})
        else:
            widget = forms.TextInput(attrs={**attrs, "maxlength": member.get("max_length")})
        return forms.Field(label=label, help_text=help_text, required=False, widget=widget)

    def _add(self, item: Item, input_name: str, form_field: forms.Field, value: Any) -> None:
        self.form_fields[input_name] = form_field
        self.initial[input_name] = self._shown(value)
        item.inputs.append(input_name)

    @staticmethod
    def _shown(value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, bool):
            return value
        return value if isinstance(value, list) else str(value)

    def _item(self, name: str, member: dict) -> Item:
        label, help_text = labels.label(name, member)
        kind = member["type"]
        value = self.current.get(name)
        item = Item(name, kind, label, help_text, inputs=[])
        if kind == "enum_list" and member["max_items"] <= ORDERED_UP_TO:
            item.composite = True
            options = [("", labels.NOT_ASKED), *self._choices(name, member["items"])]
            for n in range(1, member["max_items"] + 1):
                widget = forms.Select(choices=options, attrs={"data-kind": "list-item"})
                self._add(
                    item,
                    f"{name}{SEP}{n}",
                    forms.Field(label=labels.POSITION % {"n": n}, required=False, widget=widget),
                    (value or [])[n - 1] if len(value or []) >= n else "",
                )
        elif kind == "enum_list":
            widget = Checks(choices=self._choices(name, member["items"]), attrs={"data-kind": "list"})
            self._add(item, name, forms.Field(label=label, help_text=help_text, required=False, widget=widget), value)
        elif kind == "language_texts":
            item.composite = True
            for lang in member["keys"]["enum"]:
                sub = self._input(name, member["values"], labels.LANGUAGE_NAMES.get(lang, lang), "")
                sub.widget.attrs["data-kind"] = "map-text"
                self._add(item, f"{name}{SEP}{lang}", sub, (value or {}).get(lang))
        elif kind == "translation_matrix":
            item.composite = True
            for lang in member["keys"].get("accepted_values") or member["keys"]["enum"]:
                for text_name, text_member in member["values"]["properties"].items():
                    text_label = f"{labels.label(text_name, text_member)[0]} ({labels.LANGUAGE_NAMES.get(lang, lang)})"
                    sub = self._input(text_name, text_member, text_label, "")
                    sub.widget.attrs["data-kind"] = "map-text"
                    shown = (value or {}).get(lang, {}).get(text_name)
                    self._add(item, f"{name}{SEP}{lang}{SEP}{text_name}", sub, shown)
        elif kind == "device_profiles":
            item.composite = True
            for device, device_member in member["properties"].items():
                stored = (value or {}).get(device) or {}
                for leaf, leaf_member in device_member["properties"].items():
                    leaf_label = f"{labels.label(leaf, leaf_member)[0]} ({labels.DEVICES.get(device, device)})"
                    sub = self._input(leaf, leaf_member, leaf_label, "", inherit=True)
                    if sub.widget.attrs.get("data-kind") in ("enum", "integer_enum", "icon", "integer"):
                        sub.widget.attrs["data-kind"] += "-or-none"
                    shown = stored.get(leaf)
                    self._add(
                        item,
                        f"{name}{SEP}{device}{SEP}{leaf}",
                        sub,
                        ("1" if shown else "0") if isinstance(shown, bool) else shown,
                    )
        else:
            self._add(item, name, self._input(name, member, label, help_text), value)
        return item

    def form(self, *, values: dict | None = None) -> forms.Form:
        """The unbound form showing `values` (the posted ones after a refusal), else the current ones."""
        form_class = type("WidgetSettingsForm", (forms.Form,), dict(self.form_fields))
        return form_class(initial={**self.initial, **(values or {})}, auto_id="id_%s")

    def sections(self, form: forms.Form) -> list[dict]:
        """The page's sections and groups, each item with its bound inputs; fields no group names go
        to Advanced's last group."""
        placed = {name for _, _, groups in labels.SECTIONS for _, names in groups for name in names}
        out = []
        for slug, title, groups in labels.SECTIONS:
            section = {"slug": slug, "title": title, "groups": []}
            for index, (group_title, names) in enumerate(groups):
                names = list(names)
                if slug == "advanced" and index == len(groups) - 1:
                    names += [name for name in self.items if name not in placed]
                items = [self.items[name] for name in names if name in self.items]
                for item in items:
                    item.bound = [form[name] for name in item.inputs]
                if items:
                    section["groups"].append({"title": group_title, "items": items})
            out.append(section)
        return out

    # --- reading the post ----------------------------------------------------------------------------------

    def posted_inputs(self, post) -> dict[str, Any]:
        """The posted inputs as the form shows them again after a refusal."""
        shown = {}
        for name, form_field in self.form_fields.items():
            if name not in post:
                continue
            if isinstance(form_field.widget, Checkbox):
                shown[name] = post.getlist(name)[-1] not in ("0", "")
            elif isinstance(form_field.widget, Checks):
                shown[name] = [v for v in post.getlist(name) if v]
            else:
                shown[name] = post.get(name)
        return shown

    def changes(self, post) -> tuple[dict, Any]:
        """(the PATCH body of the changed fields, the default language if it changed else UNCHANGED)."""
        body = {}
        for name, member in self.fields.items():
            value = self._read(name, member, post)
            if value is UNCHANGED or self._same(member, value, self.current.get(name)):
                continue
            body[name] = value
        return body, body.pop(LANGUAGE, UNCHANGED)

    @staticmethod
    def _same(member: dict, value: Any, current: Any) -> bool:
        if member["type"] == "color" and isinstance(value, str) and isinstance(current, str):
            return value.lower() == current.lower()
        return value == current

    @staticmethod
    def _scalar(member: dict, raw: str, *, inherit: bool = False) -> Any:
        kind = member["type"]
        if raw == "":
            return None
        if kind == "boolean" and inherit:
            return raw not in ("0",)
        if kind in ("integer", "integer_enum"):
            return int(raw) if _INTEGER.fullmatch(raw.strip()) else raw
        if kind == "text":
            return raw.replace("\r\n", "\n")
        return raw

    def _read(self, name: str, member: dict, post) -> Any:
        kind = member["type"]
        item = self.items[name]
        if not any(input_name in post for input_name in item.inputs):
            return UNCHANGED
        if kind == "boolean":
            return post.getlist(name)[-1] not in ("0", "")
        if kind == "enum_list" and item.composite:
            picked = [post.get(n, "") for n in item.inputs]
            return [v for v in picked if v]
        if kind == "enum_list":
            return [v for v in post.getlist(name) if v]
        if kind == "language_texts":
            out = {}
            for input_name in item.inputs:
                text = self._scalar(member["values"], post.get(input_name, ""))
                if text is not None:
                    out[input_name.split(SEP)[1]] = text
            return out
        if kind == "translation_matrix":
            matrix: dict[str, dict] = {}
            for input_name in item.inputs:
                _, lang, text_name = input_name.split(SEP)
                text = self._scalar(member["values"]["properties"][text_name], post.get(input_name, ""))
                if text is not None:
                    matrix.setdefault(lang, {})[text_name] = text
            return matrix
        if kind == "device_profiles":
            return self._profiles(member, post)
        return self._scalar(member, post.get(name, ""))

    def _profiles(self, member: dict, post) -> Any:
        """The devices whose overrides changed, each with only the changed leaves (null removes one):
        `device_profiles` merges deeply."""
        current = self.current.get("device_profiles") or {}
        out = {}
        for device, device_member in member["properties"].items():
            stored = current.get(device) or {}
            delta = {}
            for leaf, leaf_member in device_member["properties"].items():
                input_name = f"device_profiles{SEP}{device}{SEP}{leaf}"
                if input_name not in post:
                    continue
                value = self._scalar(leaf_member, post.get(input_name, ""), inherit=True)
                if value != stored.get(leaf):
                    delta[leaf] = value
            if delta:
                out[device] = delta
        return out if out else UNCHANGED

    def place_errors(self, form: forms.Form, errors: dict[str, list[str]]) -> list[str]:
        """Put the API's messages under the inputs their keys name (dotted -> `__`), else on the
        setting they belong to; answers the messages that name no setting of the page."""
        general = []
        form.cleaned_data = {}  # an unbound form (it only draws) takes errors like a cleaned one
        for key, messages in errors.items():
            input_name = key.replace(".", SEP)
            top = key.split(".", 1)[0]
            for message in messages:
                if input_name in form.fields:
                    form.add_error(input_name, message)
                elif top in self.items:
                    self.items[top].errors.append(message)
                else:
                    general.append(message if key == "body" else f"{key}: {message}")
        return general

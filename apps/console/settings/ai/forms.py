"""The AI area's HTML forms. They draw and parse the inputs only: the API's serializers validate
(apps.console.settings.forms), so each field is named as the API member it fills."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.ai.models import PROVIDERS

PROVIDER_LABELS = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "gigachat": "GigaChat",
    "openai_compatible": _("OpenAI-compatible server"),
}
OPERATOR_STATUSES = (("active", _("Active")), ("paused", _("Paused")), ("retired", _("Retired")))


def as_int(value):
    """A posted id or number: "" is None, decimal digits an int, anything else stays as posted (the
    API's serializer then refuses it with its own words)."""
    value = (value or "").strip()
    if not value:
        return None
    if value.isascii() and value.lstrip("-").isdigit():
        return int(value)
    return value


def as_float(value):
    value = (value or "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return value


def lines(value) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


class SettingsForm(forms.Form):
    enabled = forms.BooleanField(
        required=False,
        label=_("The AI operator answers visitors"),
        help_text=_("With this off, the AI never replies, whatever else is set."),
    )
    shadow_mode = forms.BooleanField(
        required=False,
        label=_("Shadow mode"),
        help_text=_("The AI's answers become private notes your operators see; visitors get nothing from it."),
    )
    rag_enabled = forms.BooleanField(
        required=False,
        label=_("Answer from the knowledge base"),
        help_text=_("Every assistant gets the knowledge base's matching passages with each question."),
    )
    presence_context_enabled = forms.BooleanField(
        required=False,
        label=_("Tell the AI whether operators are online"),
        help_text=_("With nobody online, a handover then says so to the visitor."),
    )
    handover_summary = forms.BooleanField(
        required=False,
        label=_("Summarise the chat when handing it to people"),
        help_text=_("A private note for the operator who takes the chat."),
    )
    autonomous_tuning_enabled = forms.BooleanField(
        required=False,
        label=_("Let the AI improve itself"),
        help_text=_("Tuning cycles may rewrite the persona from escalations, low ratings and unanswered questions."),
    )
    takeover_timeout_sec = forms.CharField(
        label=_("Seconds before the AI answers again"),
        help_text=_("When an operator who took a chat stays silent this long after a visitor's message (30 to 86400)."),
        widget=forms.NumberInput(attrs={"min": 30, "max": 86400, "inputmode": "numeric"}),
    )

    FLAGS = ("enabled", "shadow_mode", "rag_enabled", "presence_context_enabled", "handover_summary")

    def api_data(self, post) -> dict:
        data = {name: name in post for name in (*self.FLAGS, "autonomous_tuning_enabled")}
        data["takeover_timeout_sec"] = as_int(post.get("takeover_timeout_sec"))
        return data


class OperatorForm(forms.Form):
    name = forms.CharField(label=_("Name"), required=False, help_text=_("Shown to visitors with its answers."))
    assistant_id = forms.TypedChoiceField(label=_("Assistant"), choices=())
    status = forms.ChoiceField(label=_("Status"), choices=OPERATOR_STATUSES, initial="active")
    show_in_header = forms.BooleanField(label=_("Show in the widget's header"), required=False, initial=True)

    def __init__(self, *args, assistants=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["assistant_id"].choices = [(a.pk, a.name) for a in assistants]

    @staticmethod
    def api_data(post) -> dict:
        data = {
            "assistant_id": as_int(post.get("assistant_id")),
            "status": post.get("status", ""),
            "show_in_header": "show_in_header" in post,
        }
        if (post.get("name") or "").strip():
            data["name"] = post["name"]
        return data


class AssistantForm(forms.Form):
    name = forms.CharField(label=_("Name"))
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
    is_default = forms.BooleanField(
        label=_("The default assistant"), required=False, help_text=_("The one that answers when several could.")
    )
    system_prompt = forms.CharField(
        label=_("Instructions (system prompt)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_("What the assistant does and must never do."),
    )
    persona = forms.CharField(
        label=_("Persona"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("How it sounds: tone, manners, length of answers."),
    )
    greeting = forms.CharField(label=_("Greeting"), required=False, widget=forms.Textarea(attrs={"rows": 2}))
    quick_phrases = forms.CharField(
        label=_("Quick phrases"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One per line: buttons the visitor can press instead of typing."),
    )
    escalation_triggers = forms.CharField(
        label=_("Hand over to people when the visitor writes"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One phrase per line, any letter case."),
    )
    rag_enabled = forms.BooleanField(label=_("Answer from the knowledge base"), required=False)
    cite_sources = forms.BooleanField(label=_("Show the documents an answer came from"), required=False)
    temperature = forms.CharField(
        label=_("Creativity (temperature)"),
        required=False,
        help_text=_("0 to 2; empty for the provider's default."),
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    provider = forms.ChoiceField(
        label=_("Provider"),
        required=False,
        choices=(("", _("Any")), *((p, PROVIDER_LABELS.get(p, p)) for p in PROVIDERS)),
        help_text=_("Which of your connected providers it uses when it has no credential of its own."),
    )
    model = forms.CharField(label=_("Model"), required=False, help_text=_("Empty: the credential's model."))

    @staticmethod
    def initial_of(payload: dict) -> dict:
        return {
            **payload,
            "quick_phrases": "\n".join(payload["quick_phrases"]),
            "escalation_triggers": "\n".join(payload["escalation_triggers"]),
            "temperature": "" if payload["temperature"] is None else payload["temperature"],
            "provider": payload["provider"] or "",
            "model": payload["model"] or "",
        }

    @staticmethod
    def api_data(post) -> dict:
        return {
            "name": post.get("name", ""),
            "enabled": "enabled" in post,
            "is_default": "is_default" in post,
            "system_prompt": post.get("system_prompt", ""),
            "persona": post.get("persona", ""),
            "greeting": post.get("greeting", ""),
            "quick_phrases": lines(post.get("quick_phrases")),
            "escalation_triggers": lines(post.get("escalation_triggers")),
            "rag_enabled": "rag_enabled" in post,
            "cite_sources": "cite_sources" in post,
            "temperature": as_float(post.get("temperature")),
            "provider": post.get("provider") or None,
            "model": post.get("model", ""),
        }


class CredentialForm(forms.Form):
    provider = forms.ChoiceField(
        label=_("Provider"),
        choices=[(p, PROVIDER_LABELS.get(p, p)) for p in PROVIDERS],
        help_text=_("An OpenAI-compatible server: vLLM, Ollama, OpenRouter, YandexGPT and others, at your address."),
    )
    api_key = forms.CharField(
        label=_("API key"),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "dir": "ltr"}),
        help_text=_("Stored encrypted and never shown again."),
    )
    base_url = forms.CharField(
        label=_("Server address (base URL)"),
        required=False,
        widget=forms.URLInput(attrs={"dir": "ltr", "placeholder": "https://"}),
        help_text=_("Needed for an OpenAI-compatible server; empty for the vendor's own address."),
    )
    model = forms.CharField(label=_("Model"), required=False, widget=forms.TextInput(attrs={"dir": "ltr"}))
    embedding_model = forms.CharField(
        label=_("Embedding model"),
        required=False,
        widget=forms.TextInput(attrs={"dir": "ltr"}),
        help_text=_("The model that indexes the knowledge base; empty for the provider's default."),
    )
    assistant_id = forms.ChoiceField(label=_("Only for the assistant"), required=False, choices=())
    operator_id = forms.ChoiceField(label=_("Only for the AI operator"), required=False, choices=())
    backup_credential_id = forms.ChoiceField(label=_("When it fails, try"), required=False, choices=())
    is_active = forms.BooleanField(label=_("In use"), required=False, initial=True)

    def __init__(self, *args, assistants=(), operators=(), backups=(), editing=False, **kwargs):
        super().__init__(*args, **kwargs)
        every = (("", _("Every assistant")),)
        self.fields["assistant_id"].choices = [*every, *((a.pk, a.name) for a in assistants)]
        self.fields["operator_id"].choices = [("", _("Every AI operator")), *((o.pk, o.name) for o in operators)]
        self.fields["backup_credential_id"].choices = [
            ("", _("No backup")),
            *((c.pk, f"#{c.pk} {PROVIDER_LABELS.get(c.provider, c.provider)} {c.model}".strip()) for c in backups),
        ]
        if editing:
            self.fields["provider"].disabled = True
            self.fields["api_key"].required = False
            self.fields["api_key"].help_text = _(
                "Empty keeps the stored key. A new server address needs the key again."
            )

    @staticmethod
    def api_data(post, *, editing: bool) -> dict:
        data = {
            "base_url": post.get("base_url", ""),
            "model": post.get("model", ""),
            "embedding_model": post.get("embedding_model", ""),
            "is_active": "is_active" in post,
            "assistant_id": as_int(post.get("assistant_id")),
            "operator_id": as_int(post.get("operator_id")),
            "backup_credential_id": as_int(post.get("backup_credential_id")),
        }
        if not editing:
            data["provider"] = post.get("provider", "")
        if post.get("api_key") or not editing:
            data["api_key"] = post.get("api_key", "")
        return data


class TestForm(forms.Form):
    question = forms.CharField(
        label=_("A visitor's question"),
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=4000,
        initial=_("Hello! What can you help me with?"),
    )
    operators = forms.ChoiceField(
        label=_("Operators"),
        choices=(
            ("", _("As they are now")),
            ("online", _("Someone is online")),
            ("offline", _("Nobody is online")),
        ),
        required=False,
    )


class ApproveForm(forms.Form):
    probation_hours = forms.CharField(
        label=_("Probation (hours)"),
        initial=72,
        widget=forms.NumberInput(attrs={"min": 1, "max": 168, "inputmode": "numeric"}),
        help_text=_("While it runs, no tuning cycle changes the persona (1 to 168)."),
    )
    note = forms.CharField(label=_("Note"), required=False, max_length=500)

    @staticmethod
    def api_data(post) -> dict:
        data = {"probation_hours": as_int(post.get("probation_hours"))}
        if data["probation_hours"] is None:
            del data["probation_hours"]
        if post.get("note"):
            data["note"] = post["note"]
        return data

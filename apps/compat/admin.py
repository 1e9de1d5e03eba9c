"""Django admin (the web cabinet's staff side): what create_compat_bot and create_compat_channel
do, with the token or secret shown once after saving.

SECURITY: a bot token or a channel secret reads and writes a widget's chats like an API token, so
these pages reach the same widgets the token admin does (`issuable_widgets`: the staff user's own
account's, every widget with `core.issue_for_any_widget`), for creating, listing and changing."""

from django import forms
from django.contrib import admin, messages

from apps.channels.models import CustomChannel
from apps.core.admin_site import IssuableWidgetsOnly
from apps.core.errors import ValidationFailed
from apps.webhooks import services as webhooks

from . import services
from .models import CompatBot, LegacyChatChannel


class _CreateForm(forms.ModelForm):
    def clean_url(self):
        url = self.cleaned_data["url"]
        try:
            webhooks.check_destination(url)
        except ValidationFailed as exc:
            raise forms.ValidationError((exc.errors or {}).get("url", [exc.detail])) from None
        return url


class CompatBotForm(_CreateForm):
    class Meta:
        model = CompatBot
        fields = ("widget", "url", "is_active")


@admin.register(CompatBot)
class CompatBotAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    form = CompatBotForm
    list_display = ("id", "widget", "agent", "url", "is_active", "created_at")
    list_filter = ("is_active",)
    raw_id_fields = ("widget",)

    def get_readonly_fields(self, request, obj=None):
        return ("widget",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            services.update_compat_bot(bot=obj)
            return
        bot, token, signing_secret = services.create_compat_bot(widget=obj.widget, url=obj.url)
        obj.pk, obj.agent_id, obj.token_key, obj.token_hash = bot.pk, bot.agent_id, bot.token_key, bot.token_hash
        obj.endpoint_id, obj.created_at = bot.endpoint_id, bot.created_at
        messages.warning(request, f"Bot token (shown once): {token}; CLIENT_MESSAGE signing secret: {signing_secret}")


class LegacyChatChannelForm(_CreateForm):
    class Meta:
        model = LegacyChatChannel
        fields = ("widget", "url", "is_active")


@admin.register(LegacyChatChannel)
class LegacyChatChannelAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    form = LegacyChatChannelForm
    list_display = ("id", "widget", "url", "is_active", "created_at")
    raw_id_fields = ("widget",)

    def get_queryset(self, request):
        return super().get_queryset(request).filter(wire_format=CustomChannel.WireFormat.LEGACY_CHAT)

    def get_readonly_fields(self, request, obj=None):
        return ("widget",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        channel_id, secret = services.create_compat_channel(widget=obj.widget, url=obj.url)
        saved = CustomChannel.objects.get(pk=channel_id)
        for field in ("pk", "name", "wire_format", "path_key", "path_secret_hash", "secret_encrypted", "created_at"):
            setattr(obj, field, getattr(saved, field))
        messages.warning(request, f"Channel {channel_id} secret (shown once): {secret}")

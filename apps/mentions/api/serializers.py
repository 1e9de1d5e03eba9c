"""Query and documented shapes of the mention routes."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.query import IdQueryField
from apps.core.api.serializers import InputSerializer


class MentionDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The mention's id.")
    chat_id = serializers.IntegerField(help_text="The chat of the note.")
    message_id = serializers.IntegerField(help_text="The private note that mentions the operator.")
    agent_id = serializers.IntegerField(help_text="The mentioned operator.")
    by_agent_id = serializers.IntegerField(allow_null=True, help_text="The note's author; null once deleted.")
    text = serializers.CharField(help_text="The note's text, whitespace collapsed, cut at 200 characters.")
    created_at = serializers.DateTimeField(help_text="When the note was written.")
    read_at = serializers.DateTimeField(allow_null=True, help_text="When it was read; null while unread.")


class MentionListQuery(InputSerializer):
    empty_is_valid = True  # no parameters: every mention of the widget
    agent_id = IdQueryField(required=False, help_text="Only the mentions of this operator.")
    unread = serializers.ChoiceField(
        choices=["true", "false"], required=False, help_text="`true`: only unread mentions; `false`: only read ones."
    )

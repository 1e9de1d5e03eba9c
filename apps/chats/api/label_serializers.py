"""Documented shapes of the label routes (`/labels`, `/chats/{id}/labels`); their inputs are
apps.chats.label_input's, shared with the console."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import InputSerializer

from ..label_input import ChatLabelsInput as ChatLabelsInput
from ..label_input import LabelInput as LabelInput
from ..label_input import LabelNameField as LabelNameField
from ..label_input import LabelPatchInput as LabelPatchInput


class LabelListQuery(InputSerializer):
    """Only the page's `cursor` and `limit`."""

    empty_is_valid = True


class LabelDoc(serializers.Serializer):
    id = serializers.IntegerField(help_text="The label's id.")
    name = serializers.CharField(help_text="The label's name as stored (NFC).")
    color = serializers.CharField(allow_null=True, help_text="`#rrggbb`, or null when none was chosen.")


class ChatLabelsDoc(serializers.Serializer):
    labels = serializers.ListField(
        child=serializers.CharField(), help_text="The chat's label names, sorted without regard to case."
    )


def label_payload(label) -> dict:
    return {"id": label.pk, "name": label.name, "color": label.color or None}

"""Tags stored before names were normalised: a tag that differs from another of the same contact
only in Unicode normalisation is the same tag (product-decisions.md, "Text that people read")."""

import unicodedata

from django.db import migrations


def tags_to_nfc(apps, schema_editor):
    ContactTag = apps.get_model("chats", "ContactTag")
    for tag in ContactTag.objects.order_by("pk").iterator():
        composed = unicodedata.normalize("NFC", tag.name)
        if tag.name.isascii() or composed == tag.name:
            continue
        if ContactTag.objects.filter(contact_id=tag.contact_id, name=composed).exists():
            tag.delete()
        else:
            tag.name = composed
            tag.save(update_fields=["name"])


class Migration(migrations.Migration):
    dependencies = [("chats", "0007_file_in_core")]

    operations = [migrations.RunPython(tags_to_nfc, migrations.RunPython.noop)]

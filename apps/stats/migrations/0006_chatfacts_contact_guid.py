from django.db import migrations, models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce


def from_contacts(apps, schema_editor):
    """Rows from before the column: the guid of the contact the row names (a row whose contact is
    gone keeps the empty default)."""
    facts = apps.get_model("stats", "ChatFacts")
    contact = apps.get_model("chats", "Contact")
    guid = contact.objects.filter(pk=OuterRef("contact_id")).values("guid")[:1]
    facts.objects.filter(contact_id__isnull=False).update(contact_guid=Coalesce(Subquery(guid), models.Value("")))


class Migration(migrations.Migration):
    dependencies = [
        ("chats", "0012_message_sources"),
        ("stats", "0005_rollup_shards"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatfacts",
            name="contact_guid",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.RunPython(from_contacts, migrations.RunPython.noop),
    ]

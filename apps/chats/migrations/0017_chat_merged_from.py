from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chats", "0016_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="chat",
            name="merged_from",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
        migrations.AddIndex(
            model_name="chat",
            index=models.Index(fields=["widget", "contact", "channel"], name="chat_contact_channel"),
        ),
        migrations.RemoveConstraint(
            model_name="chat",
            name="chat_one_room_per_contact_channel",
        ),
        migrations.AddConstraint(
            model_name="chat",
            constraint=models.UniqueConstraint(
                condition=models.Q(("merged_from", "")),
                fields=("widget", "contact", "channel"),
                name="chat_one_room_per_contact_channel",
            ),
        ),
    ]

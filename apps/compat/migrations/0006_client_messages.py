import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The state of a CLIENT_MESSAGE and the bot's signing secret now live in the webhook engine."""

    dependencies = [
        ("compat", "0005_client_messages_to_the_engine"),
    ]

    operations = [
        migrations.RemoveField(model_name="compatbot", name="signing_secret_encrypted"),
        migrations.AlterField(
            model_name="compatbot",
            name="endpoint",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT, related_name="+", to="webhooks.endpoint"
            ),
        ),
        migrations.RemoveField(model_name="compatbotdelivery", name="event_id"),
        migrations.RemoveField(model_name="compatbotdelivery", name="body"),
        migrations.RemoveField(model_name="compatbotdelivery", name="status"),
        migrations.RemoveField(model_name="compatbotdelivery", name="attempts"),
        migrations.RemoveField(model_name="compatbotdelivery", name="last_status_code"),
        migrations.RemoveField(model_name="compatbotdelivery", name="last_error"),
        migrations.RemoveField(model_name="compatbotdelivery", name="updated_at"),
        migrations.AlterField(
            model_name="compatbotdelivery",
            name="delivery",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="webhooks.delivery"
            ),
        ),
        migrations.AlterModelOptions(name="compatbotdelivery", options={}),
        migrations.RenameModel(old_name="CompatBotDelivery", new_name="ClientMessage"),
        migrations.AlterField(
            model_name="clientmessage",
            name="bot",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="client_messages", to="compat.compatbot"
            ),
        ),
    ]

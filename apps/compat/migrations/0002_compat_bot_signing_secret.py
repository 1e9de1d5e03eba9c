from django.db import migrations, models


def sign_existing_bots(apps, schema_editor):
    """Bots made before CLIENT_MESSAGE was signed get a secret too (read it with
    `manage.py reset_compat_bot_secret`), so every post is signed."""
    from apps.core.crypto import encrypt_secret, generate_secret

    CompatBot = apps.get_model("compat", "CompatBot")
    for bot in CompatBot.objects.filter(signing_secret_encrypted=""):
        bot.signing_secret_encrypted = encrypt_secret(generate_secret())
        bot.save(update_fields=["signing_secret_encrypted"])


class Migration(migrations.Migration):
    dependencies = [
        ("compat", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="compatbot",
            name="signing_secret_encrypted",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(sign_existing_bots, migrations.RunPython.noop),
    ]

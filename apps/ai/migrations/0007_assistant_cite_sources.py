from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ai', '0005_credential_embedding_model'),
    ]

    operations = [
        migrations.AddField(
            model_name='assistant',
            name='cite_sources',
            field=models.BooleanField(default=False),
        ),
    ]

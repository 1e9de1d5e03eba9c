from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('chats', '0011_escalations_both_ways'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='sources',
            field=models.JSONField(blank=True, null=True),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0006_idempotencykey_answer'),
        ('stats', '0004_export_columns'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='dailyagentfacts',
            name='dailyagentfacts_key',
        ),
        migrations.RemoveConstraint(
            model_name='dailywidgetfacts',
            name='dailywidgetfacts_key',
        ),
        migrations.AddField(
            model_name='dailyagentfacts',
            name='shard',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='dailywidgetfacts',
            name='shard',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddConstraint(
            model_name='dailyagentfacts',
            constraint=models.UniqueConstraint(fields=('widget', 'agent_id', 'day', 'shard'), name='dailyagentfacts_key'),
        ),
        migrations.AddConstraint(
            model_name='dailywidgetfacts',
            constraint=models.UniqueConstraint(fields=('widget', 'day', 'channel', 'is_internal', 'shard'), name='dailywidgetfacts_key'),
        ),
    ]

"""Fewer indexes on the delivery and attempt tables: each one is written on every lease and every
record of a delivery (neither update is HOT). The foreign keys' own indexes go where a composite
index leads with the column (widget, subscription, an attempt's delivery); endpoint and redelivery_of,
null on most rows, get partial indexes instead. The database only drops and creates indexes: the
foreign-key constraints stay (altering the fields would drop and re-validate them, a scan of the
whole table)."""

import django.db.models.deletion
from django.db import migrations, models

# (table, column, Django's index name of the field's own index)
DROPPED = (
    ("webhooks_attempt", "delivery_id", "webhooks_attempt_delivery_id_bb1708b1"),
    ("webhooks_delivery", "endpoint_id", "webhooks_delivery_endpoint_id_6cbee67d"),
    ("webhooks_delivery", "redelivery_of_id", "webhooks_delivery_redelivery_of_id_3b374e3a"),
    ("webhooks_delivery", "subscription_id", "webhooks_delivery_subscription_id_f436ed71"),
    ("webhooks_delivery", "widget_id", "webhooks_delivery_widget_id_3529b365"),
)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_signednonce"),
        ("webhooks", "0003_delivery_endpoints"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX IF NOT EXISTS "{index}" ON "{table}" ("{column}")',
                )
                for table, column, index in DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="attempt",
                    name="delivery",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attempt_rows",
                        to="webhooks.delivery",
                    ),
                ),
                migrations.AlterField(
                    model_name="delivery",
                    name="endpoint",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="webhooks.endpoint",
                    ),
                ),
                migrations.AlterField(
                    model_name="delivery",
                    name="redelivery_of",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="webhooks.delivery",
                    ),
                ),
                migrations.AlterField(
                    model_name="delivery",
                    name="subscription",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="webhooks.subscription",
                    ),
                ),
                migrations.AlterField(
                    model_name="delivery",
                    name="widget",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.widget",
                    ),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("endpoint__isnull", False)), fields=["endpoint"], name="delivery_endpoint"
            ),
        ),
        migrations.AddIndex(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("redelivery_of__isnull", False)),
                fields=["redelivery_of"],
                name="delivery_redelivery_of",
            ),
        ),
    ]

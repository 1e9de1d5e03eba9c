import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

COUNTED_AUTHORS = ("client", "agent", "ai")


def from_chats(apps, schema_editor):
    """Rows from before the columns: the chat's contact, department, closing time, counted messages
    and latest rating as they are now."""
    facts = apps.get_model("stats", "ChatFacts")
    chat = apps.get_model("chats", "Chat")
    message = apps.get_model("chats", "Message")
    rating = apps.get_model("chats", "Rating")
    own = chat.objects.filter(pk=OuterRef("chat_id"))
    counted = (
        message.objects.filter(chat_id=OuterRef("chat_id"), visibility="public", author_kind__in=COUNTED_AUTHORS)
        .order_by()
        .values("chat_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    latest = rating.objects.filter(chat_id=OuterRef("chat_id")).order_by("-created_at", "-id").values("value")[:1]
    facts.objects.update(
        contact_id=Subquery(own.values("contact_id")),
        department_id=Subquery(own.values("department_id")),
        closed_at=Subquery(own.values("closed_at")),
        messages=Coalesce(Subquery(counted), 0),
        rating=Subquery(latest),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0001_initial"),
        ("chats", "0012_message_sources"),
        ("stats", "0003_escalations_both_ways"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatfacts",
            name="contact_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="chatfacts",
            name="department",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="agents.department",
            ),
        ),
        migrations.AddField(
            model_name="chatfacts",
            name="closed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="chatfacts",
            name="messages",
            field=models.IntegerField(
                default=0, help_text="Counted messages: public, by the visitor, a person or the AI operator."
            ),
        ),
        migrations.AddField(
            model_name="chatfacts",
            name="rating",
            field=models.PositiveSmallIntegerField(blank=True, help_text="The chat's latest rating.", null=True),
        ),
        migrations.RunPython(from_chats, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="chatfacts", name="chatfacts_widget_created"),
        migrations.AddIndex(
            model_name="chatfacts",
            index=models.Index(fields=["widget", "created_at", "chat"], name="chatfacts_widget_created_chat"),
        ),
    ]

# Who uploaded a file through the visitor API moves from chats_file.uploaded_by to its own table,
# so the File model can move to the core app (which may not refer to contacts).

import django.db.models.deletion
from django.db import migrations, models


def copy_uploaders(apps, schema_editor):
    File = apps.get_model("chats", "File")
    VisitorUpload = apps.get_model("chats", "VisitorUpload")
    rows = File.objects.filter(uploaded_by__isnull=False).values_list("pk", "widget_id", "uploaded_by_id")
    VisitorUpload.objects.bulk_create(
        [VisitorUpload(file_id=pk, widget_id=widget_id, contact_id=contact_id) for pk, widget_id, contact_id in rows],
        batch_size=1000,
    )


def restore_uploaders(apps, schema_editor):
    File = apps.get_model("chats", "File")
    VisitorUpload = apps.get_model("chats", "VisitorUpload")
    for upload in VisitorUpload.objects.all().iterator():
        File.objects.filter(pk=upload.file_id).update(uploaded_by_id=upload.contact_id)


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0001_initial"),
        ("chats", "0005_file_uploaded_by"),
    ]

    operations = [
        migrations.CreateModel(
            name="VisitorUpload",
            fields=[
                (
                    "file",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="visitor_upload",
                        serialize=False,
                        to="chats.file",
                    ),
                ),
                (
                    "contact",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="uploads", to="chats.contact"
                    ),
                ),
                (
                    "widget",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="core.widget"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["widget", "contact"], name="visitor_upload_contact")],
            },
        ),
        migrations.RunPython(copy_uploaders, restore_uploaders),
        migrations.RemoveField(model_name="file", name="uploaded_by"),
    ]

"""The plans product-decisions.md names: `free` (the default), `pro` and `business`. Plans an
operator already made under these slugs are left as they are."""

from django.db import migrations

PLANS = [
    {"slug": "free", "name": "Free", "is_paid": False, "seats": 3, "paid_features": [], "ad_cabinet_slots": 0,
     "premium_skins": False, "is_default": True},
    {"slug": "pro", "name": "Pro", "is_paid": True, "seats": 10, "paid_features": ["messengers", "ai"],
     "ad_cabinet_slots": 2, "premium_skins": True, "is_default": False},
    {"slug": "business", "name": "Business", "is_paid": True, "seats": 50,
     "paid_features": ["messengers", "ai", "ad_cabinets"], "ad_cabinet_slots": 10, "premium_skins": True,
     "is_default": False},
]  # fmt: skip


def seed(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    has_default = Plan.objects.filter(is_default=True).exists()
    for row in PLANS:
        if Plan.objects.filter(slug=row["slug"]).exists():
            continue
        Plan.objects.create(**{**row, "is_default": row["is_default"] and not has_default})


def unseed(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    Plan.objects.filter(slug__in=[row["slug"] for row in PLANS], accounts__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("billing", "0002_document_file_in_core")]

    operations = [migrations.RunPython(seed, unseed)]

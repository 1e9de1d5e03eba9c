"""The admin's page titles and index read as English: a plural is not the singular plus "s"."""

import re

from django.apps import apps
from django.contrib import admin

# Words whose plural takes "es" (switch, push, index, wish, status) or "ies" (a consonant before y).
NEEDS_ES_OR_IES = re.compile(r"(ch|sh|s|x|z|[^aeiou]y)$")


def test_every_admin_page_has_a_correct_plural():
    wrong = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
        if plural == singular + "s" and NEEDS_ES_OR_IES.search(singular):
            wrong.append(f"{model._meta.label}: {plural}")
    assert not wrong, wrong

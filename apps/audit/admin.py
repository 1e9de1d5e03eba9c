"""Audited writes of Django admin. The log's own page is registered by apps.privacy.admin, which may
import the core's admin site (the staff user's widget reach); this app imports no other."""

from django.contrib import admin

from . import services


class AuditedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves and deletions write an audit row (the staff user is the actor:
    apps.audit.middleware). Django admin runs them inside the transaction of its change and delete
    views, so the row commits with the write.

    Subclasses name `audit_target` (`ai_credential`: actions `ai_credential.created`, `.changed`,
    `.deleted`) and, where a flag retires the row, `audit_retired_field` (a change turning it off
    is `.retired`)."""

    audit_target: str = ""
    audit_retired_field: str | None = None

    def _audit(self, obj, action: str, before: dict, after: dict, *, always: bool) -> None:
        services.record_change(
            widget=obj.widget_id,
            action=f"{self.audit_target}.{action}",
            target_type=self.audit_target,
            target_id=obj.pk,
            before=before,
            after=after,
            always=always,
        )

    def save_model(self, request, obj, form, change):
        before = services.values(type(obj).objects.get(pk=obj.pk)) if change and obj.pk else {}
        super().save_model(request, obj, form, change)
        after = services.values(obj)
        action = "changed" if change else "created"
        flag = self.audit_retired_field
        if change and flag and before.get(flag) and not after.get(flag):
            action = "retired"
        self._audit(obj, action, before, after, always=not change)

    def delete_model(self, request, obj):
        before, pk = services.values(obj), obj.pk
        super().delete_model(request, obj)
        obj.pk = pk
        self._audit(obj, "deleted", before, {}, always=True)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_model(request, obj)

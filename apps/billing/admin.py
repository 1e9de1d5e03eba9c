"""Django admin: operations staff create plans, billing records, legal entities and withdrawals here
(there is no API that accepts an amount or moves money).

A widget record's account is always the widget's account when it is created; cross references
(an invoice's entity and document, a transaction's invoice and entity) are checked by the models'
`clean`. Plan seats, withdrawals and legal entities go through `billing.services`.

SECURITY: every page of an account's or a widget's rows is limited to the staff user's reach
(`IssuableWidgetsOnly`): operations staff who work on every account hold
`core.issue_for_any_widget`. Plans are the platform's catalogue, of no account.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from apps.core.admin_site import IssuableWidgetsOnly, show_errors

from . import services
from .api.serializers import LegalEntityInput
from .models import (
    AccountPlan,
    Balance,
    Invoice,
    InvoiceItem,
    LegalEntity,
    Plan,
    Subscription,
    Transaction,
    Withdrawal,
)


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "is_paid", "seats", "ad_cabinet_slots", "premium_skins", "is_default")
    search_fields = ("slug", "name")

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "seats" in form.changed_data:
            services.sync_plan_seats(plan=obj)


@admin.register(AccountPlan)
class AccountPlanAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    tenant, tenant_is_account = "account", True
    list_display = ("account", "plan", "extra_seats", "started_at")
    raw_id_fields = ("account",)
    fields = ("account", "plan", "extra_seats")

    def get_readonly_fields(self, request, obj=None):
        # A change is of this account's plan; another account's plan is assigned on the add page.
        return ("account",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        assigned = services.assign_plan(
            account=obj.account,
            plan=form.cleaned_data["plan"],
            extra_seats=form.cleaned_data.get("extra_seats") or 0,
        )
        obj.pk = assigned.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.remove_plan(account=obj.account)

    def delete_queryset(self, request, queryset):
        for assigned in queryset.select_related("account"):
            services.remove_plan(account=assigned.account)


class LegalEntityForm(forms.ModelForm):
    """The API's rules for an entity: the fields as `LegalEntityInput` checks them (all on adding,
    the changed ones on a change), and no change while an unpaid withdrawal names the entity
    (`services.lock_changeable_entity`, a form error naming entity_locked_by_pending_withdrawal).
    Admin's change view runs in one transaction, so the entity's row lock taken here holds until
    the save commits: no withdrawal is created between the check and the save."""

    class Meta:
        model = LegalEntity
        fields = ("account", *services.ENTITY_FIELDS)

    def clean(self):
        data = super().clean()
        if self.errors or not self.has_changed():
            return data
        adding = self.instance.pk is None
        names = services.ENTITY_FIELDS if adding else [f for f in self.changed_data if f in services.ENTITY_FIELDS]
        serializer = LegalEntityInput(data={name: data.get(name) for name in names}, partial=not adding)
        if not serializer.is_valid():
            show_errors(self, serializer.errors)
            return data
        self.changes = dict(serializer.validated_data)
        if not adding:
            stored = LegalEntity.objects.select_related("account").get(pk=self.instance.pk)
            try:
                services.lock_changeable_entity(account=stored.account, entity=stored)
            except services.EntityLockedByPendingWithdrawal as exc:
                raise forms.ValidationError(f"{exc.detail} ({exc.code})", code=exc.code) from None
        return data


@admin.register(LegalEntity)
class LegalEntityAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    """Adds, changes and deletions go through the API's services and rules (LegalEntityForm;
    deletion is refused while a withdrawal, an invoice or a transaction names the entity) and spend
    none of the account's API budget. An entity never moves to another account."""

    form = LegalEntityForm
    tenant, tenant_is_account = "account", True
    list_display = ("id", "short_name", "inn", "account", "created_at")
    search_fields = ("short_name", "full_name", "inn", "account__user__email")
    raw_id_fields = ("account",)

    def get_readonly_fields(self, request, obj=None):
        return ("created_at", "updated_at") if obj is None else ("account", "created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        changes = getattr(form, "changes", None)
        if changes is None:
            return
        if change:
            services.update_legal_entity(account=obj.account, entity=obj, changes=changes, spend_budget=False)
        else:
            obj.pk = services.create_legal_entity(account=obj.account, fields=changes, spend_budget=False).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.delete_legal_entity(account=obj.account, entity=obj, spend_budget=False)

    def delete_queryset(self, request, queryset):
        for entity in queryset.select_related("account"):
            self.delete_model(request, entity)


@admin.register(Withdrawal)
class WithdrawalAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    tenant, tenant_is_account = "account", True
    list_display = ("id", "account", "legal_entity", "status", "amount_minor", "currency", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("account", "legal_entity")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("account", "legal_entity", "amount_minor", "currency", "minor_unit_scale", "created_at")

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        created = services.create_withdrawal(
            account=obj.account,
            legal_entity=obj.legal_entity,
            amount_minor=obj.amount_minor,
            currency=obj.currency,
            minor_unit_scale=obj.minor_unit_scale,
        )
        if obj.status != created.status:
            Withdrawal.objects.filter(pk=created.pk).update(status=obj.status)
        obj.pk = created.pk
        obj.refresh_from_db()


class WidgetRecordForm(forms.ModelForm):
    """The record's account is the widget's account, set before the model's own checks run."""

    def clean(self):
        data = super().clean()
        widget = data.get("widget")
        if widget is not None and self.instance.pk is None:
            self.instance.account_id = widget.account_id
        return data


class WidgetRecordAdmin(IssuableWidgetsOnly, admin.ModelAdmin):
    form = WidgetRecordForm
    exclude = ("account",)
    raw_id_fields = ("widget",)

    def get_readonly_fields(self, request, obj=None):
        return ("widget", "account") if obj is not None else ()


@admin.register(Balance)
class BalanceAdmin(WidgetRecordAdmin):
    list_display = ("widget", "account", "balance_minor", "reserved_minor", "currency", "updated_at")


@admin.register(Transaction)
class TransactionAdmin(WidgetRecordAdmin):
    list_display = ("id", "widget", "type", "state", "direction", "amount_minor", "currency", "created_at")
    list_filter = ("type", "state", "direction")
    raw_id_fields = ("widget", "invoice", "legal_entity")


@admin.register(Subscription)
class SubscriptionAdmin(WidgetRecordAdmin):
    list_display = ("id", "widget", "kind", "product", "status", "price_minor", "currency", "created_at")
    list_filter = ("kind", "status")


class InvoiceItemInline(admin.TabularInline):
    model = InvoiceItem
    extra = 0
    fields = ("position", "description", "quantity", "unit_price_minor", "amount_minor")
    readonly_fields = ("amount_minor",)


class InvoiceForm(WidgetRecordForm):
    document_upload = forms.FileField(
        required=False, help_text="Upload the invoice document (PDF); it becomes a file of the widget."
    )

    class Meta:
        model = Invoice
        fields = (
            "widget",
            "number",
            "status",
            "payment_method",
            "legal_entity",
            "total_minor",
            "currency",
            "minor_unit_scale",
            "document",
            "issued_at",
            "due_at",
            "paid_at",
            "created_at",
        )


@admin.register(Invoice)
class InvoiceAdmin(WidgetRecordAdmin):
    """Lines are optional (invoices of the legacy path have none); with lines the total is their sum."""

    form = InvoiceForm
    inlines = [InvoiceItemInline]
    list_display = ("number", "widget", "status", "payment_method", "legal_entity", "total_minor", "currency")
    list_filter = ("status", "payment_method")
    raw_id_fields = ("widget", "legal_entity", "document")

    def save_model(self, request, obj, form, change):
        upload = form.cleaned_data.get("document_upload")
        if upload is not None:
            obj.document = services.store_invoice_document(
                widget=obj.widget,
                content=upload,
                name=upload.name,
                content_type=getattr(upload, "content_type", None),
                size=upload.size,
            )
        super().save_model(request, obj, form, change)

    def save_formset(self, request, form, formset, change):
        items = formset.save(commit=False)
        for item in items:
            item.amount_minor = item.quantity * item.unit_price_minor
            item.save()
        for item in formset.deleted_objects:
            item.delete()

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        services.recompute_invoice_total(invoice=form.instance)

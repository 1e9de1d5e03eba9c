from django.contrib import admin

from .models import Agent


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "widget", "type", "status", "role", "is_owner", "created_at")
    list_filter = ("type", "status", "role")
    search_fields = ("name", "email")
    raw_id_fields = ("widget", "user")

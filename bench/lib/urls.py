"""The project's URLs plus the floor views (bench.lib.settings only)."""

from django.urls import path

from config.urls import urlpatterns as project_urlpatterns

from . import floor_views

urlpatterns = [
    path("bench/chats", floor_views.chat_list),
    path("bench/chats/<int:chat_id>/messages", floor_views.send_message),
    path("bench/chats/<int:chat_id>/transcript", floor_views.transcript),
    path("bench/visitor/<int:contact_id>/messages", floor_views.visitor_message),
    path("bench/webhook-subscriptions", floor_views.subscription_list),
    path("bench/ai/assistants/<int:assistant_id>/test", floor_views.ai_test),
    *project_urlpatterns,
]

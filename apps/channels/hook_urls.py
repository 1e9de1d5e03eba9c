from django.urls import re_path

from .api.messenger_views import ProviderHookView

urlpatterns = [
    re_path(r"^(?P<provider>[a-z]{2,8})/(?P<hook_id>[A-Za-z0-9_-]{1,64})/?$", ProviderHookView.as_view(), name="hook"),
]

"""/demo/ (outside the API): the demo host page."""

from django.urls import re_path

from .demo import demo_page

urlpatterns = [
    re_path(r"^$", demo_page, name="widget-demo"),
]

from django.urls import re_path

from apps.core.api.routers import ApiRouter

from . import views

router = ApiRouter()
router.register("kb/uploads", views.UploadViewSet, basename="kb-upload")

rules = views.RuleViewSet.as_view({"get": "list", "post": "create", "delete": "delete_source"})
rule = views.RuleViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})

urlpatterns = [
    re_path(r"^kb/rules/?$", rules, name="kb-rule-list"),
    re_path(r"^kb/rules/(?P<pk>[^/.]+)/?$", rule, name="kb-rule-detail"),
    re_path(r"^kb/sources/?$", views.SourceListView.as_view(), name="kb-sources"),
    re_path(r"^kb/search/?$", views.SearchView.as_view(), name="kb-search"),
    re_path(r"^kb/status/?$", views.StatusView.as_view(), name="kb-status"),
    re_path(r"^kb/crawler/?$", views.CrawlerView.as_view(), name="kb-crawler"),
    *router.urls,
]

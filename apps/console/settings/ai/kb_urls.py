"""/console/settings/ai/knowledge/: the knowledge base (documents, crawls, rules, search preview)."""

from django.urls import path

from . import kb_crawls, kb_rules, kb_views

urlpatterns: list = [
    path("", kb_views.index, name="ai-knowledge"),
    path("documents/", kb_views.upload, name="ai-knowledge-upload"),
    path("documents/list/", kb_views.documents, name="ai-knowledge-documents"),
    path("documents/<int:pk>/delete/", kb_views.document_delete, name="ai-knowledge-document-delete"),
    path("crawl/", kb_crawls.start, name="ai-knowledge-crawl"),
    path("crawl/progress/", kb_crawls.progress, name="ai-knowledge-crawl-progress"),
    path("crawl/cancel/", kb_crawls.cancel, name="ai-knowledge-crawl-cancel"),
    path("rules/", kb_rules.create, name="ai-knowledge-rule-create"),
    path("rules/<int:pk>/", kb_rules.edit, name="ai-knowledge-rule"),
    path("rules/<int:pk>/delete/", kb_rules.delete, name="ai-knowledge-rule-delete"),
    path("search/", kb_views.search, name="ai-knowledge-search"),
]

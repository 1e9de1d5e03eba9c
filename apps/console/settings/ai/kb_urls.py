"""/console/settings/ai/knowledge/: the knowledge base (documents, crawls, rules, search preview)."""

urlpatterns: list = []

"""The operator console, mounted at /console/ (Django session, CSRF; outside the API)."""

from django.urls import include, path, re_path

from . import (
    account_views,
    context_views,
    label_views,
    macro_views,
    mention_views,
    merge_views,
    queue_views,
    reports,
    views,
)

app_name = "console"

ID = r"(?P<chat_id>[0-9]{1,20})"

urlpatterns = [
    path("", views.chat_list, name="chats"),
    path("login/", account_views.login_view, name="login"),
    path("", include("apps.console.twofa_urls")),  # two-factor sign-in: the code step, enrolment, the account page
    path("logout/", account_views.logout_view, name="logout"),
    path("", include("apps.console.push_urls")),  # Web Push: the operator's Notifications section
    path("sso/", include("apps.console.sso_urls")),  # single sign-on (OpenID Connect)
    path("widget/", account_views.switch_widget, name="switch-widget"),
    path("language/", account_views.set_language, name="language"),
    re_path(rf"^chats/{ID}/$", views.chat_detail, name="chat"),
    re_path(rf"^chats/{ID}/messages/$", views.chat_messages, name="messages"),
    re_path(rf"^chats/{ID}/panel/$", views.chat_panel, name="panel"),
    re_path(rf"^chats/{ID}/reply/$", views.reply, name="reply"),
    re_path(rf"^chats/{ID}/note/$", views.note, name="note"),
    re_path(rf"^chats/{ID}/file/$", views.send_file, name="file"),
    re_path(rf"^chats/{ID}/suggest/$", views.suggest, name="suggest"),
    re_path(rf"^chats/{ID}/accept/$", views.accept, name="accept"),
    re_path(rf"^chats/{ID}/transfer/$", views.transfer, name="transfer"),
    re_path(rf"^chats/{ID}/close/$", views.close, name="close"),
    re_path(rf"^chats/{ID}/spam/$", views.mark_spam, name="spam"),
    re_path(rf"^chats/{ID}/not-spam/$", views.not_spam, name="not-spam"),
    re_path(rf"^chats/{ID}/rate-request/$", views.rate_request, name="rate-request"),
    re_path(rf"^chats/{ID}/typing/$", views.typing, name="typing"),
    re_path(rf"^chats/{ID}/seen/$", views.seen, name="seen"),
    re_path(rf"^chats/{ID}/assign/$", queue_views.assign, name="assign"),
    re_path(rf"^chats/{ID}/macros/run/$", macro_views.run_macro, name="macro-run"),
    path("settings/", include("apps.console.settings.urls")),
    path("", include("apps.console.pwa_urls")),  # the manifest, the service worker, the offline page
    path("reports/", reports.reports, name="reports"),
    path("canned/", views.canned_picks, name="canned"),
    path("mentions/", mention_views.mentions, name="mentions"),
    path("mentions/operators/", mention_views.mention_picks, name="mention-picks"),
    re_path(r"^mentions/(?P<mention_id>[0-9]{1,20})/open/$", mention_views.open_mention, name="open-mention"),
    path("views/", views.save_view, name="save-view"),
    re_path(r"^views/(?P<view_id>[0-9]{1,20})/delete/$", views.delete_view, name="delete-view"),
    re_path(rf"^chats/{ID}/canned/(?P<canned_id>[0-9]{{1,20}})/$", views.canned_render, name="canned-render"),
    re_path(rf"^chats/{ID}/context/$", context_views.context_panel, name="context"),
    re_path(rf"^chats/{ID}/contact/$", context_views.edit_contact, name="contact"),
    re_path(rf"^chats/{ID}/contact/attribute/$", context_views.set_attribute, name="contact-attribute"),
    re_path(
        rf"^chats/{ID}/contact/attribute/remove/$", context_views.remove_attribute, name="contact-attribute-remove"
    ),
    re_path(rf"^chats/{ID}/contact/tags/$", context_views.add_tags, name="contact-tags"),
    re_path(rf"^chats/{ID}/contact/merge/search/$", merge_views.merge_search, name="contact-merge-search"),
    re_path(rf"^chats/{ID}/contact/merge/$", merge_views.merge_contact, name="contact-merge"),
    re_path(rf"^chats/{ID}/labels/$", label_views.set_labels, name="chat-labels"),
]

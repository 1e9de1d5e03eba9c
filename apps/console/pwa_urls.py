"""The installable console's routes, at the console's root (included by apps.console.urls): the
service worker's scope is the folder of its script, so /console/sw.js covers every console page."""

from django.urls import path

from . import pwa

urlpatterns = [
    path("manifest.webmanifest", pwa.manifest, name="manifest"),
    path("sw.js", pwa.service_worker, name="sw"),
    path("offline/", pwa.offline, name="offline"),
]

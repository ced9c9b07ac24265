from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("forge.api.urls")),
    path("", include("forge.console.urls")),
]

handler400 = "forge.console.views.pages.bad_request"
handler403 = "forge.console.views.pages.refused"
handler404 = "forge.console.views.pages.not_found"

"""The API's infrastructure under test: /api/v1/me, the schema and docs pages and the test-only operations of
infra_views, with the API's 404 for any other /api/v1/ path."""

from django.urls import include, path, re_path

from forge.api.docs import api_docs, api_schema

from forge.api.problems import not_found
from forge.api.routes import by_method
from tests.forge.api import infra_views as views

api = [
    path("", include("forge.api.views.me")),
    path("schema/", api_schema, name="api-schema"),
    path("docs/", api_docs, name="api-docs"),
    path("test/groups", views.GroupMakeApi.as_view()),
    path("test/refuse", views.RefuseApi.as_view()),
    path("test/people", views.PeopleApi.as_view()),
    path("test/audit", views.AuditReadApi.as_view()),
    path("test/kill", views.KillSwitchLikeApi.as_view()),
    path("test/both", by_method(get=views.PeopleApi, post=views.GroupMakeApi)),
    re_path(r"", not_found),
]
urlpatterns = [path("api/v1/", include(api))]

"""Operations that exist only for the tests of the API's infrastructure (tests/forge/api/infra_urls.py): a write
with side effects, one that waits to be let go, refusals of every kind, and a paged list."""

from __future__ import annotations

import threading

from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import serializers

from forge import errors
from forge.api.base import ApiView
from forge.api.serializers import StrictSerializer

WAITING = {"entered": threading.Event(), "release": threading.Event()}


class GroupOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class GroupMakeApi(ApiView):
    """Makes a group: a write whose effect a test can count."""

    success_status = 201
    Output = GroupOut

    class Input(StrictSerializer):
        class Colour(StrictSerializer):
            name = serializers.CharField(max_length=20)
            shade = serializers.IntegerField(min_value=0, max_value=9, required=False)

        name = serializers.CharField(max_length=30)
        size = serializers.IntegerField(min_value=0, max_value=10, required=False)
        tags = serializers.ListField(child=serializers.CharField(max_length=10), required=False, max_length=5)
        colour = Colour(required=False)

    def post(self, request):
        data = self.read(request)
        if data["name"] == "wait":  # holds its answer until the test lets it go (the in-flight case)
            WAITING["entered"].set()
            if not WAITING["release"].wait(timeout=60):
                raise RuntimeError("the test never let the request go")
        if data["name"] == "boom":
            raise RuntimeError("an operation that fails unexpectedly")
        if data["name"] == "busy":
            raise errors.Unavailable("The server is busy.")
        group = Group.objects.create(name=f"{data['name']}-{Group.objects.count()}")
        return self.answer(group, headers={"Location": f"/api/v1/test/groups/{group.pk}"})

    def delete(self, request):
        return self.answer(status=204)


KINDS = {cls.__name__: cls for cls in errors.PROBLEMS}


class RefuseApi(ApiView):
    """Refuses as `?kind=` says: a ForgeError kind by name, or Django's Http404 or PermissionDenied."""

    def get(self, request):
        kind = request.query_params.get("kind", "")
        if kind == "Http404":
            raise Http404("No such thing.")
        if kind == "DjangoPermissionDenied":
            raise PermissionDenied("Not yours.")
        if kind == "RateLimited" and "retry" in request.query_params:
            raise errors.RateLimited("Slow down.", retry_after=7)
        raise KINDS[kind](f"A {kind} refusal.", code="a_code", extra_field=1)


class PeopleApi(ApiView):
    """Every person, a page at a time (`?order=name` by username, else the newest id first)."""

    paged = True

    class Output(serializers.Serializer):
        id = serializers.IntegerField()
        username = serializers.CharField()

    def get(self, request):
        if request.query_params.get("order") == "joined":
            return self.page(User.objects.all(), ordering=("-date_joined", "id"))
        if request.query_params.get("order") == "name":
            return self.page(User.objects.all(), ordering=("username",))
        return self.page(User.objects.all())


class AuditReadApi(ApiView):
    action = "audit:read"

    def get(self, request):
        return self.answer(data={"ok": True})


class KillSwitchLikeApi(ApiView):
    action = "killswitch.set"

    def post(self, request):
        return self.answer(data={"ok": True})

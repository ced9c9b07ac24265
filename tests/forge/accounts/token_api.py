"""A token endpoint as a later API would write one (docs/console.md, "Logins"): it checks the password with
Django's authenticate(), given Django's own request, and so is throttled like the login pages."""

from django.contrib.auth import authenticate
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


class TokenApi(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    def post(self, request):
        user = authenticate(request._request, username=request.data.get("username"),
                            password=request.data.get("password"))
        if user is None:
            return Response({"error": "invalid user name or password"}, status=400)
        return Response({"token": f"token-for-{user.get_username()}"})


urlpatterns = [path("api/v1/token", TokenApi.as_view()), path("", include("forge.urls"))]

"""The API's operations, one module per area, each with its `urlpatterns` (included by forge/api/urls.py)."""

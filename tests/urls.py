from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("payments/", include("django_paycharge.urls")),
    path("api/payments/", include("django_paycharge.api.urls")),
]

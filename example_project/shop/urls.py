from __future__ import annotations

from django.urls import path

from . import card_views, refunds, views

app_name = "shop"

urlpatterns = [
    path("", views.product_list, name="products"),
    path("orders/", views.place_order, name="place_order"),
    path("orders/<uuid:public_id>/", views.order_detail, name="order"),
    path("orders/<uuid:public_id>/status.json", views.order_status, name="order_status"),
    path("orders/<uuid:public_id>/checkout/", views.checkout, name="checkout"),
    path("orders/<uuid:public_id>/pay/", views.pay, name="pay"),
    path("orders/<uuid:public_id>/pay/saved-card/", card_views.pay_saved, name="pay_saved"),
    path("orders/<uuid:public_id>/card/", card_views.change_card, name="change_card"),
    path("orders/<uuid:public_id>/refund/", refunds.refund, name="refund"),
    path("demo/bank/<uuid:public_id>/", views.demo_bank, name="demo_bank"),
    path("demo/clock/<uuid:public_id>/", views.demo_move_clock, name="demo_move_clock"),
]

"""The retail tools' dependency graph: every tool's preconditions and postconditions (written into its
description in dependency-graph mode; docs/servers.md renders them), and the steps `--graph-refusal` enforces:
every tool that reads or changes a customer's own data needs the customer found first."""

from shiftbox_servers.kit import (
    CALCULATE_CONDITIONS,
    conditions,
    dependency_graph,
    transfer_conditions,
)

_AUTHENTICATED = ("find_user_id_by_email", "find_user_id_by_name_zip")
_PRODUCT = ("get_product_details", "get_order_details")

DEPENDENCIES = dependency_graph(
    {tool: [_AUTHENTICATED] for tool in (
        "get_user_details", "get_order_details", "cancel_pending_order", "modify_pending_order_address",
        "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
        "return_delivered_order_items", "exchange_delivered_order_items",
    )},
    {
        "calculate": CALCULATE_CONDITIONS,
        "find_user_id_by_email": conditions("the customer is authenticated: their user id is known",
                                            pre="the customer's email is known"),
        "find_user_id_by_name_zip": conditions("the customer is authenticated: their user id is known",
                                               pre="the customer's first and last name and zip code are known"),
        "get_user_details": conditions(
            "the customer's profile is known: address, payment methods (gift card balances) and order ids"),
        "get_order_details": conditions("the order's status, items, address, payments and fulfilments are known",
                                        after=["get_user_details"]),
        "get_product_details": conditions("the product's variant items are known: options, availability, price",
                                          pre="the product id is known",
                                          after=[("list_all_product_types", "get_order_details")]),
        "get_item_details": conditions("the item's options, availability and price are known",
                                       after=[_PRODUCT]),
        "list_all_product_types": conditions("every product type's name and id is known"),
        "cancel_pending_order": conditions(
            "the order is cancelled and refunded", pre="the order is 'pending' and the customer confirmed",
            after=["get_order_details"]),
        "modify_pending_order_address": conditions(
            "the order ships to the new address", pre="the order is pending and the customer confirmed the address",
            after=["get_order_details"]),
        "modify_pending_order_items": conditions(
            "the order has the new items (once per order); the price difference is settled",
            pre="the order is pending, each new item is an available option of the same product, and the "
                "customer confirmed", after=["get_order_details", "get_product_details", "get_user_details"]),
        "modify_pending_order_payment": conditions(
            "the order is paid with the new method", pre="the order is pending and the customer confirmed",
            after=["get_order_details", "get_user_details"]),
        "modify_user_address": conditions(
            "the customer's default address is the new one (existing orders keep theirs)",
            pre="the customer confirmed the address", after=["get_user_details"]),
        "return_delivered_order_items": conditions(
            "a return is requested for the items; the refund goes to the chosen method",
            pre="the order is 'delivered' and the customer confirmed the items and refund method",
            after=["get_order_details", "get_user_details"]),
        "exchange_delivered_order_items": conditions(
            "an exchange is requested for the items; the price difference is settled",
            pre="the order is 'delivered', each new item is an available option of the same product, and the "
                "customer confirmed", after=["get_order_details", "get_product_details", "get_user_details"]),
        "transfer_to_human_agents": transfer_conditions("customer"),
    },
)

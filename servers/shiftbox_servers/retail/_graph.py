"""The retail tools' dependency graph (enforced only in dependency-graph mode; docs/servers.md renders it):
every tool that reads or changes a customer's own data needs the customer found first."""

from shiftbox_servers.kit import dependency_graph

_AUTHENTICATED = ("find_user_id_by_email", "find_user_id_by_name_zip")

DEPENDENCIES = dependency_graph({tool: [_AUTHENTICATED] for tool in (
    "get_user_details", "get_order_details", "cancel_pending_order", "modify_pending_order_address",
    "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
    "return_delivered_order_items", "exchange_delivered_order_items",
)})

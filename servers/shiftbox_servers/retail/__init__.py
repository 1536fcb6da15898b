"""The retail domain: 16 tools over products, users, orders, payments (tau2's retail contract); tool sets
`tau2` (tau2-bench's retail tools as tau2 serves them) and `agentchangebench` (its fork's 15)."""

from pathlib import Path

from shiftbox_servers.kit import DeferredToolSets, Domain, deferred

from ._graph import DEPENDENCIES
from ._missions import MISSIONS
from ._schema import CLOCK_START, SCHEMA, SCHEMA_VERSION, SNAPSHOT_VERSION, new_database
from ._tools import tools

_AUTH = ("find_user_id_by_email", "find_user_id_by_name_zip")

GOAL_TOOLS: dict[str, tuple[str, ...]] = {
    "order_tracking": (*_AUTH, "get_user_details", "get_order_details"),
    "order_cancellation": (*_AUTH, "get_order_details", "cancel_pending_order"),
    "address_change": (*_AUTH, "get_order_details", "modify_pending_order_address"),
    "item_modification": (*_AUTH, "get_order_details", "get_product_details", "get_item_details", "calculate",
                          "modify_pending_order_items"),
    "returns": (*_AUTH, "get_order_details", "calculate", "return_delivered_order_items"),
    "exchange": (*_AUTH, "get_order_details", "get_product_details", "get_item_details", "calculate",
                 "exchange_delivered_order_items"),
    "payment_change": (*_AUTH, "get_user_details", "get_order_details", "modify_pending_order_payment"),
    "account_update": (*_AUTH, "get_user_details", "modify_user_address"),
    "product_inquiry": ("list_all_product_types", "get_product_details", "get_item_details"),
}
"""Goal label -> the tools relevant to it (read by the task generator, validator and GSRT)."""

GOAL_REQUESTS: dict[str, tuple[str, ...]] = {
    "order_tracking": (
        "Can you tell me where my order {order_id} is and what its status is?",
        "I'd like to check on the status of my recent order.",
        "Could you look up my order and tell me whether it has shipped?",
    ),
    "order_cancellation": (
        "I want to cancel order {order_id}; I no longer need it.",
        "I'd like to cancel an order I placed by mistake.",
        "Please cancel my pending order, I don't need it anymore.",
    ),
    "address_change": (
        "I need to change the shipping address on my order {order_id}.",
        "Could you update the delivery address for my pending order?",
        "My order is going to the wrong address; can you fix that?",
    ),
    "item_modification": (
        "I'd like to change an item in my pending order {order_id} to a different option.",
        "Can I switch the size or color of something I ordered before it ships?",
        "I want to modify the items in an order that hasn't shipped yet.",
    ),
    "returns": (
        "I want to return some items from my order {order_id}.",
        "I'd like to send back something I received and get a refund.",
        "Could you help me return an item from a delivered order?",
    ),
    "exchange": (
        "I'd like to exchange an item from my delivered order {order_id} for a different option.",
        "Something I received isn't quite right; can I exchange it for another version?",
        "I want to swap an item I received for a different color or size.",
    ),
    "payment_change": (
        "I'd like to pay for my order {order_id} with a different payment method.",
        "Can you change the payment method on my pending order?",
        "I want to switch which card or account my order is charged to.",
    ),
    "account_update": (
        "I've moved and need to update the default address on my account.",
        "Could you change the address saved on my profile?",
        "Please update my account's default shipping address.",
    ),
    "product_inquiry": (
        "I have a question about a product: which options are available and what do they cost?",
        "Can you tell me what variants you have in stock for one of your products?",
        "I'm curious about the options and prices of something in your store.",
    ),
}
"""Goal label -> how a customer asks for it (scripted users pick one per goal by seed)."""

GOAL_LEXICON: dict[str, tuple[str, ...]] = {
    "order_tracking": ("status", "track", "shipped", "deliver", "shipment"),
    "order_cancellation": ("cancel",),
    "address_change": ("shipping address", "delivery address", "address on the order", "ship to"),
    "item_modification": ("modif", "change the item", "different option", "switch the item"),
    "returns": ("return", "refund", "send back"),
    "exchange": ("exchang", "swap"),
    "payment_change": ("payment method", "pay with", "paypal", "gift card", "credit card", "charged to"),
    "account_update": ("default address", "profile", "address on file", "account address"),
    "product_inquiry": ("in stock", "variant", "options", "availab", "product details"),
}
"""Goal label -> words that show the agent took the goal up (GSRT's deterministic ack detector)."""
GENERIC_TERMS = ("order", "item", "product", "customer", "account", "details", "information", "help")


build_native = deferred(f"{__name__}._builder", "build_native")
import_agentchangebench = deferred(f"{__name__}._import_acb", "import_agentchangebench")
check_payments_balance = deferred(f"{__name__}._builder", "check_payments_balance")

_TOOLSETS = DeferredToolSets({"tau2": (f"{__name__}._tau2", "tau2_tools"),
                              "agentchangebench": (f"{__name__}._tau2", "acb_tools")})
"""The tool sets beside the default, each loaded when asked for."""
__getattr__, __dir__ = _TOOLSETS.exports(__name__)

DOMAIN = Domain(
    name="retail",
    tools=tools,
    policy=(Path(__file__).with_name("policy.md")).read_text(),
    goal_tools=GOAL_TOOLS,
    goal_lexicon=GOAL_LEXICON,
    generic_terms=GENERIC_TERMS,
    goal_requests=GOAL_REQUESTS,
    snapshot_version=SNAPSHOT_VERSION,
    build_snapshot=build_native,
    importers={"agentchangebench": import_agentchangebench},
    missions=MISSIONS,
    dependency_graph=DEPENDENCIES,
    toolsets=_TOOLSETS,
)

__all__ = [
    "CLOCK_START", "DEPENDENCIES", "DOMAIN", "GOAL_LEXICON", "GOAL_REQUESTS", "GOAL_TOOLS", "MISSIONS", "SCHEMA", "SCHEMA_VERSION",
    "SNAPSHOT_VERSION", "acb_tools", "build_native", "check_payments_balance", "import_agentchangebench",
    "new_database", "tau2_tools", "tools",
]

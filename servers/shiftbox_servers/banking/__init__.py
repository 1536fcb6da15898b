"""The banking domain: 20 tools over customers, accounts, cards, payments and disputes; and the
AgentChangeBench tool set (`--toolset agentchangebench`): the reference's 21 tools as they were."""

from pathlib import Path

from shiftbox_servers.kit import DeferredToolSets, Domain, deferred

from ._graph import DEPENDENCIES
from ._missions import MISSIONS
from ._phone import normalize_phone
from ._schema import CLOCK_START, SCHEMA, SCHEMA_VERSION, SNAPSHOT_VERSION, new_database
from ._tools import parity_tools, tools

GOAL_TOOLS: dict[str, tuple[str, ...]] = {
    "authentication": ("get_customer_by_phone", "get_customer_by_id", "get_customer_by_name"),
    "account_info": ("get_accounts", "get_account"),
    "transactions": ("get_transactions",),
    "statements": ("get_statements",),
    "payments": ("add_payee", "create_payment_request", "check_payment_request",
                 "authorize_payment_request", "make_payment", "cancel_payment_request"),
    "cards": ("lock_card", "unlock_card"),
    "dispute": ("get_transactions", "file_dispute", "get_dispute"),
    "fraud_response": ("get_transactions", "lock_card", "file_dispute"),
    "insights": ("get_transactions", "get_statements", "get_accounts"),
}
"""Goal label -> the tools relevant to it (read by the task generator, validator and GSRT)."""

GOAL_REQUESTS: dict[str, tuple[str, ...]] = {
    "authentication": (
        "I'd like to get my identity verified so I can get into my account.",
        "I'm having trouble signing in. Can you confirm who I am first?",
        "Could you look me up and verify my identity, please?",
    ),
    "account_info": (
        "Can you tell me which accounts I have and what their balances are?",
        "I'd like to check the current balances on my accounts.",
        "Could you give me a quick overview of my accounts?",
    ),
    "transactions": (
        "I want to look over the recent transactions on my account.",
        "Could you pull up my latest transactions?",
        "Can you show me what has been charged to my account lately?",
    ),
    "statements": (
        "I need to see my recent account statements.",
        "Could you pull up my latest monthly statement?",
        "I'd like to go through my statements from the last few months.",
    ),
    "payments": (
        "I need to take care of a bill payment from my account.",
        "Can you help me set up and send a payment?",
        "I have a payment that needs to go through today.",
    ),
    "cards": (
        "I'd like to lock my card for now, just to be safe.",
        "I need to change whether my card is locked or not.",
        "Can you help me with my card's lock settings?",
    ),
    "dispute": (
        "There's a charge on my account that I want to dispute.",
        "I'd like to dispute transaction {transaction_id}; that charge isn't right.",
        "I need to open a dispute about a transaction I disagree with.",
    ),
    "fraud_response": (
        "I think someone used my card: there's a charge I never made.",
        "I spotted an unauthorized charge, {transaction_id}, and I want my card secured.",
        "There's suspicious activity on my account and I need it stopped.",
    ),
    "insights": (
        "Can you help me understand where my money has been going lately?",
        "I'd like a summary of my recent spending.",
        "Could you give me some insight into my spending habits?",
    ),
}
"""Goal label -> how a customer asks for it (scripted users pick one per goal by seed)."""


GOAL_LEXICON: dict[str, tuple[str, ...]] = {
    "authentication": ("verify", "identity", "confirm your", "log in", "login", "sign in", "authenticat"),
    "account_info": ("balance", "account info", "account details", "account type", "available funds"),
    "transactions": ("transaction", "charge", "purchase", "activity"),
    "statements": ("statement",),
    "payments": ("payment", "pay ", "bill", "payee"),
    "cards": ("card", "lock", "unlock"),
    "dispute": ("dispute",),
    "fraud_response": ("fraud", "suspicious", "unauthorized", "secure"),
    "insights": ("spending", "insight", "summary", "trend"),
}
"""Goal label -> words that show the agent took the goal up (GSRT's deterministic ack detector)."""
GENERIC_TERMS = ("account", "customer", "bank", "money", "request", "details", "information", "help")


build_native = deferred(f"{__name__}._builder", "build_native")
import_agentchangebench = deferred(f"{__name__}._import_acb", "import_agentchangebench")

_TOOLSETS = DeferredToolSets({"agentchangebench": (f"{__name__}._reference", "reference_tools")})
"""The tool sets beside the default, each loaded when asked for."""
__getattr__, __dir__ = _TOOLSETS.exports(__name__)

DOMAIN = Domain(
    name="banking",
    tools=tools,
    policy=(Path(__file__).with_name("policy.md")).read_text(),
    goal_tools=GOAL_TOOLS,
    goal_lexicon=GOAL_LEXICON,
    generic_terms=GENERIC_TERMS,
    goal_requests=GOAL_REQUESTS,
    missions=MISSIONS,
    dependency_graph=DEPENDENCIES,
    snapshot_version=SNAPSHOT_VERSION,
    build_snapshot=build_native,
    importers={"agentchangebench": import_agentchangebench},
    toolsets=_TOOLSETS,
)

__all__ = [
    "CLOCK_START", "DEPENDENCIES", "DOMAIN", "GOAL_REQUESTS", "GOAL_TOOLS", "MISSIONS", "SCHEMA", "SCHEMA_VERSION",
    "SNAPSHOT_VERSION", "build_native", "import_agentchangebench", "new_database", "normalize_phone",
    "parity_tools", "reference_tools", "tools",
]

"""The banking domain: 20 tools over customers, accounts, cards, payments and disputes."""

from pathlib import Path

from shiftbox_servers.kit import Domain

from ._schema import SCHEMA_VERSION, SNAPSHOT_VERSION
from ._tools import tools

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


def _build(directory: Path):
    from ._builder import build_native

    return build_native(directory)


def _import_agentchangebench(source: Path, directory: Path):
    from ._import_acb import import_agentchangebench

    return import_agentchangebench(source, directory)


DOMAIN = Domain(
    name="banking",
    tools=tools,
    policy=(Path(__file__).with_name("policy.md")).read_text(),
    goal_tools=GOAL_TOOLS,
    snapshot_version=SNAPSHOT_VERSION,
    build_snapshot=_build,
    importers={"agentchangebench": _import_agentchangebench},
)

__all__ = ["DOMAIN", "GOAL_TOOLS", "SCHEMA_VERSION", "SNAPSHOT_VERSION", "tools"]

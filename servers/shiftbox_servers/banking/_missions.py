"""Banking missions for the seeded task generator (`shiftbox tasks generate banking`).

One builder per goal label: `build(db, rng, subject) -> Mission | None` (`shiftbox_servers.kit.Mission`). `db` is the task's
episode database as the earlier goals left it (read it, never write), `rng` the generator's seeded
random, `subject` the customer row the task is about. None means "not feasible for this customer"
(the generator then tries another customer). A mission is plain typed data (the generator in the
client package reads it):

    goal          the goal label
    action_type   single | serial | parallel | chat | clarify (chat: a general question, grounded in
                  one read whose output the agent must say: every mission has gold calls)
    reason        what the user wants, one sentence in the second person ("You want ...")
    known         sentences for known_info (the ids and facts the user knows)
    calls         gold calls in order (`MissionCall`: key, tool, params, after: keys, required: params | None);
                  a param value {"$from": "key.path"} is taken from an earlier call's real output
    communicate   "key.path" of call outputs the agent must tell the user (dots index lists too)
    nl_assertions behaviour statements for the judge

`MISSIONS` names authentication its opener: the generator usually starts tasks with it.
"""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from shiftbox_servers.kit import Fact, FactUse, Given, Mission, MissionSet
from shiftbox_servers.kit import mission as _mission
from shiftbox_servers.kit import mission_call as _call
from shiftbox_servers.kit import select_rows as _rows

SUSPICIOUS_REFERENCE = "SUSPICIOUS_CHARGE"
NEW_PAYEES = ("City Water Utility", "Greenfield Lawn Care", "Metro Gas & Electric", "Northside Dental",
              "Summit Fitness Club", "Lakeview Property Management")
DISPUTE_STORIES = {
    "duplicate_charge": "you were charged twice for the same purchase",
    "incorrect_amount": "the amount is higher than what you agreed to pay",
    "goods_not_received": "you never received what you paid for",
    "canceled_service": "you had canceled that service before the charge",
}


def _accounts(db: sqlite3.Connection, customer_id: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT * FROM accounts WHERE customer_id = ? ORDER BY account_id", (customer_id,))


def _cards(db: sqlite3.Connection, customer_id: str, statuses: tuple[str, ...]) -> list[dict[str, Any]]:
    marks = ", ".join("?" * len(statuses))
    return _rows(db, "SELECT c.*, a.type AS account_type FROM cards c JOIN accounts a USING (account_id) "
                     f"WHERE a.customer_id = ? AND c.status IN ({marks}) ORDER BY c.card_id",
                 (customer_id, *statuses))


def _recent_transactions(db: sqlite3.Connection, account_id: str, limit: int) -> list[dict[str, Any]]:
    """The account's newest transactions, in get_transactions order."""
    return _rows(db, "SELECT * FROM transactions WHERE account_id = ? ORDER BY timestamp DESC, tx_id DESC LIMIT ?",
                 (account_id, limit))


def _with_statements(db: sqlite3.Connection, customer_id: str) -> list[dict[str, Any]]:
    """The customer's accounts that have a statement."""
    return [a for a in _accounts(db, customer_id)
            if db.execute("SELECT 1 FROM statements WHERE account_id = ?", (a["account_id"],)).fetchone()]


def _with_transactions(db: sqlite3.Connection, customer_id: str) -> list[dict[str, Any]]:
    """The customer's accounts that have a transaction."""
    return [a for a in _accounts(db, customer_id) if _recent_transactions(db, a["account_id"], 1)]


def _disputable(db: sqlite3.Connection, tx: dict[str, Any]) -> bool:
    if tx["amount"] >= 0 or tx["status"] not in ("Posted", "Pending"):
        return False
    return db.execute("SELECT 1 FROM disputes WHERE tx_id = ?", (tx["tx_id"],)).fetchone() is None


def _money(value: float) -> str:
    return f"{abs(value):.2f}"


def _label(account: dict[str, Any]) -> str:
    return account["type"].replace("_", " ")





# -- builders ----------------------------------------------------------------------------------------


def authentication(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    nl = ("Agent verified the customer's identity before sharing any account details",)
    reason = "You want the agent to verify your identity so you can get help with your accounts."
    if rng.random() < 0.7:
        call = _call("identify", "get_customer_by_phone", {"phone_number": subject["phone_number"]})
    else:
        call = _call("identify", "get_customer_by_name",
                     {"full_name": subject["full_name"], "dob": subject["date_of_birth"]})
    return _mission("authentication", "single", reason, [call], nl=nl)


def account_info(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    accounts = _accounts(db, subject["customer_id"])
    if not accounts:
        return None
    if len(accounts) > 1 and rng.random() < 0.6:
        i = rng.randrange(len(accounts))
        return _mission(
            "account_info", "single", "You want an overview of all your accounts and their balances.",
            [_call("accounts", "get_accounts", {"customer_id": subject["customer_id"]})],
            communicate=(f"accounts.accounts.{i}.account_id", f"accounts.accounts.{i}.current_balance"),
            nl=("Agent listed every account of the customer with its balance",))
    account = rng.choice(accounts)
    return _mission(
        "account_info", "single", f"You want the current and available balance of your {_label(account)} account.",
        [_call("account", "get_account", {"account_id": account["account_id"]})],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("account.available_balance", "account.status"),
        nl=("Agent gave the balance of the account the customer asked about",))


def transactions(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    accounts = _with_transactions(db, subject["customer_id"])
    if not accounts:
        return None
    account = rng.choice(accounts)
    call = _call("review", "get_transactions", {"account_id": account["account_id"]})
    communicate = ("review.transactions.0.merchant_or_payee", "review.transactions.0.tx_id")
    if len(accounts) > 1 and rng.random() < 0.35:
        return _mission(
            "transactions", "clarify",
            f"You want to review the latest transactions on one of your accounts (your {_label(account)} "
            "account), but you only say which one when the agent asks.",
            [call], known=(f"Your {_label(account)} account is {account['account_id']}.",),
            communicate=communicate,
            nl=("Agent asked which account the customer meant before listing transactions",))
    return _mission(
        "transactions", "single", f"You want to review the latest transactions on your {_label(account)} account.",
        [call], known=(f"Your {_label(account)} account is {account['account_id']}.",), communicate=communicate,
        nl=("Agent listed the account's most recent transactions",))


def statements(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    accounts = _with_statements(db, subject["customer_id"])
    if not accounts:
        return None
    account = rng.choice(accounts)
    params: dict[str, Any] = {"account_id": account["account_id"]}
    reason = f"You want to see the latest statements of your {_label(account)} account."
    if rng.random() < 0.4:
        params["limit"] = 3
        reason = f"You want to see the last three statements of your {_label(account)} account."
    return _mission(
        "statements", "single", reason, [_call("statements", "get_statements", params)],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("statements.statements.0.total_due", "statements.statements.0.due_date"),
        nl=("Agent gave the total due and due date of the newest statement",))


def payments(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    customer_id = subject["customer_id"]
    open_requests = _rows(db, "SELECT * FROM payment_requests WHERE customer_id = ? AND status IN "
                              "('Awaiting Payment', 'Authorized') ORDER BY request_id", (customer_id,))
    if open_requests and rng.random() < 0.5:
        request = rng.choice(open_requests)
        return _mission(
            "payments", "single",
            f"You want to cancel your open payment request {request['request_id']} of {_money(request['amount'])}; "
            "you no longer want it paid.",
            [_call("cancel", "cancel_payment_request", {"request_id": request["request_id"]})],
            known=(f"Your open payment request is {request['request_id']}.",),
            communicate=("cancel.status",),
            nl=("Agent confirmed the request before canceling it", "Agent told the customer the request is canceled"))
    if any(r["status"] == "Awaiting Payment" for r in open_requests):
        return None  # a customer may have only one request awaiting payment
    return _pay(db, rng, customer_id, None, "")


def _pay(db: sqlite3.Connection, rng: random.Random, customer_id: str, given: Given | None,
         known_amount: str) -> Mission | None:
    """A new payment (create -> authorize -> pay) to a payee, new or saved, from an account that covers it: of a
    random amount, or of the amount `given` by another domain (its param `{"$given": "amount"}`)."""
    floor = 60.0 if given is None else float(given.values["amount"]) + 1
    sources = [a for a in _accounts(db, customer_id)
               if a["status"] == "Active" and a["type"] in ("checking", "savings") and a["available_balance"] >= floor]
    if not sources:
        return None
    account = rng.choice(sources)
    if given is None:
        amount: Any = round(rng.uniform(20, min(600.0, account["available_balance"] / 2)), 2)
        what = f"{amount:.2f}"
    else:
        amount, what = {"$given": "amount"}, given.phrase
    payees = _rows(db, "SELECT * FROM payees WHERE customer_id = ? ORDER BY payee_id", (customer_id,))
    calls: list[dict[str, Any]] = []
    known = [f"Your {_label(account)} account is {account['account_id']}."]
    if payees and rng.random() < 0.75:
        payee = rng.choice(payees)
        to_payee: Any = payee["payee_id"]
        name = payee["name"]
        known.append(f"Your payee {name} has payee id {payee['payee_id']}.")
    else:
        taken = {p["name"].lower() for p in payees}
        name = rng.choice([n for n in NEW_PAYEES if n.lower() not in taken])
        calls.append(_call("add_payee", "add_payee", {"customer_id": customer_id, "name": name}))
        to_payee = {"$from": "add_payee.payee_id"}
        known.append(f"{name} is not yet one of your payees.")
    first = (calls[0].key,) if calls else ()
    calls += [
        _call("create", "create_payment_request", {"customer_id": customer_id, "from_account_id": account["account_id"],
                                                   "to_payee_id": to_payee, "amount": amount}, first),
        _call("authorize", "authorize_payment_request", {"request_id": {"$from": "create.request_id"}}, ("create",)),
        _call("pay", "make_payment", {"request_id": {"$from": "create.request_id"}}, ("authorize",)),
    ]
    if known_amount:
        known.append(known_amount)
    return _mission(
        "payments", "serial",
        f"You want to pay {what} to {name} from your {_label(account)} account today.",
        calls, known=tuple(known), communicate=("create.request_id", "pay.settled_tx_id"),
        nl=("Agent got the customer's explicit confirmation before moving money",
            "Agent told the customer the payment settled"))


def payment_of_given(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any],
                     given: Given) -> Mission | None:
    """A payment whose amount another domain holds: the user names it, never states it."""
    if db.execute("SELECT 1 FROM payment_requests WHERE customer_id = ? AND status = 'Awaiting Payment'",
                  (subject["customer_id"],)).fetchone():
        return None
    return _pay(db, rng, subject["customer_id"], given,
                "You don't know the amount yourself: the agent must look it up there.")


def cards(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    customer_id = subject["customer_id"]
    active = _cards(db, customer_id, ("Active",))
    locked = _cards(db, customer_id, ("Locked",))
    usable = _cards(db, customer_id, ("Active", "Locked"))
    if len(usable) > 1 and active and rng.random() < 0.3:
        card = rng.choice(active)
        others = [c["card_id"] for c in usable if c["card_id"] != card["card_id"]]
        return _mission(
            "cards", "clarify",
            f"You want one of your cards locked (your {card['type']} card {card['card_id']}); you only say which "
            "when the agent asks.",
            [_call("lock", "lock_card", {"card_id": card["card_id"], "reason": "customer_request"},
                   required=["card_id"])],
            known=(f"Your {card['type']} card is {card['card_id']}; your other cards are {', '.join(others)}.",),
            communicate=("lock.status",),
            nl=("Agent asked which card the customer meant before locking it",))
    if locked and (not active or rng.random() < 0.4):
        card = rng.choice(locked)
        return _mission(
            "cards", "single", f"You found your {card['type']} card and want it unlocked.",
            [_call("unlock", "unlock_card", {"card_id": card["card_id"]})],
            known=(f"Your {card['type']} card is {card['card_id']}.",),
            communicate=("unlock.status",), nl=("Agent unlocked the card only after verifying the customer",))
    if not active:
        return None
    card = rng.choice(active)
    return _mission(
        "cards", "single", f"You lost your {card['type']} card and want it locked.",
        [_call("lock", "lock_card", {"card_id": card["card_id"], "reason": "lost"}, required=["card_id"])],
        known=(f"Your {card['type']} card is {card['card_id']}.",),
        communicate=("lock.status",), nl=("Agent locked the card and confirmed it is locked",))


def dispute(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    options = []
    for account in _accounts(db, subject["customer_id"]):
        for tx in _recent_transactions(db, account["account_id"], 30):
            if tx["type"] == "card_purchase" and tx["reference"] != SUSPICIOUS_REFERENCE and _disputable(db, tx):
                options.append((account, tx))
    if not options:
        return None
    account, tx = rng.choice(options)
    code = rng.choice(sorted(DISPUTE_STORIES))
    charge = f"the {_money(tx['amount'])} charge from {tx['merchant_or_payee']} on {tx['timestamp'][:10]}"
    reason = f"You want to dispute {charge} because {DISPUTE_STORIES[code]}."
    nl = ("Agent filed the dispute with a reason code that matches the customer's story",
          "Agent gave the customer the dispute id")
    file_params = {"account_id": account["account_id"], "tx_id": tx["tx_id"], "reason_code": code}
    roll = rng.random()
    if roll < 0.35:
        return _mission(
            "dispute", "clarify", reason + " You don't know the transaction id.",
            [_call("find", "get_transactions", {"account_id": account["account_id"]}),
             _call("file", "file_dispute", file_params, ("find",))],
            known=(f"The charge is on your {_label(account)} account {account['account_id']}.",),
            communicate=("file.dispute_id",),
            nl=("Agent looked up the transactions to find the charge before filing", *nl))
    known = (f"The charge is transaction {tx['tx_id']} on your {_label(account)} account {account['account_id']}.",)
    if roll < 0.65:
        return _mission(
            "dispute", "serial", reason + " You also want to know the dispute's status.",
            [_call("file", "file_dispute", file_params),
             _call("check", "get_dispute", {"dispute_id": {"$from": "file.dispute_id"}}, ("file",))],
            known=known, communicate=("file.dispute_id", "check.status"), nl=nl)
    return _mission("dispute", "single", reason, [_call("file", "file_dispute", file_params)], known=known,
                    communicate=("file.dispute_id",), nl=nl)


def fraud_response(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    suspicious, ordinary = [], []
    for card in _cards(db, subject["customer_id"], ("Active", "Locked")):
        for tx in _recent_transactions(db, card["account_id"], 30):
            if tx["type"] == "card_purchase" and _disputable(db, tx):
                (suspicious if tx["reference"] == SUSPICIOUS_REFERENCE else ordinary).append((card, tx))
    if not (suspicious or ordinary):
        return None
    card, tx = rng.choice(suspicious or ordinary)
    account_id = card["account_id"]
    return _mission(
        "fraud_response", "parallel",
        f"You see a {_money(tx['amount'])} charge from {tx['merchant_or_payee']} that you never made; you want your "
        f"{card['type']} card secured and the charge disputed.",
        [_call("review", "get_transactions", {"account_id": account_id}),
         _call("lock", "lock_card", {"card_id": card["card_id"], "reason": "suspected fraud"}, ("review",),
               required=["card_id"]),
         _call("dispute", "file_dispute", {"account_id": account_id, "tx_id": tx["tx_id"],
                                           "reason_code": "unauthorized"}, ("review",))],
        known=(f"Your {card['type']} card is {card['card_id']}, on account {account_id}.",),
        communicate=("dispute.dispute_id", "lock.status"),
        nl=("Agent locked the card and disputed the unauthorized charge",
            "Agent told the customer the dispute id"))


def insights(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    with_statements = _with_statements(db, subject["customer_id"])
    if rng.random() < 0.25:
        if not with_statements:
            return None
        account = rng.choice(with_statements)
        return _mission(
            "insights", "chat",
            "You want general tips on keeping your monthly spending under control, starting from what the newest "
            f"statement of your {_label(account)} account asks you to pay, and by when.",
            [_call("statement", "get_statements", {"account_id": account["account_id"], "limit": 1})],
            known=(f"Your {_label(account)} account is {account['account_id']}.",),
            communicate=("statement.statements.0.total_due", "statement.statements.0.due_date"),
            nl=("Agent gave general budgeting guidance without quoting figures it had not looked up",))
    accounts = [a for a in with_statements if _recent_transactions(db, a["account_id"], 1)]
    if not accounts:
        return None
    account = rng.choice(accounts)
    customer_id = subject["customer_id"]
    return _mission(
        "insights", "parallel",
        f"You want a summary of where your money has been going, mainly on your {_label(account)} account.",
        [_call("accounts", "get_accounts", {"customer_id": customer_id}),
         _call("spending", "get_transactions", {"account_id": account["account_id"]}),
         _call("statements", "get_statements", {"account_id": account["account_id"]})],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("spending.transactions.0.merchant_or_payee", "statements.statements.0.total_due"),
        nl=("Agent summarized spending from the customer's real transactions and statements",))


# -- variants: the chat and clarify missions a types plan asks for (`MissionSet.variants`) -----------------


def balance_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat account_info: why available and current balance differ, with the customer's own figures."""
    accounts = _accounts(db, subject["customer_id"])
    if not accounts:
        return None
    account = rng.choice(accounts)
    return _mission(
        "account_info", "chat",
        "You want to understand, in general, why a bank shows an available balance that can differ from the current "
        f"balance, with the figures of your {_label(account)} account as the example.",
        [_call("account", "get_account", {"account_id": account["account_id"]})],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("account.available_balance",),
        nl=("Agent explained pending items and holds in general terms, quoting only balances it had looked up",))


def minimum_payment_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat statements: what paying only the minimum means, with the newest statement's minimum."""
    accounts = _with_statements(db, subject["customer_id"])
    if not accounts:
        return None
    account = rng.choice(accounts)
    return _mission(
        "statements", "chat",
        "You want to know, in general, what happens if you pay only the minimum due instead of the full balance, "
        f"and what the minimum on the newest statement of your {_label(account)} account is.",
        [_call("statement", "get_statements", {"account_id": account["account_id"], "limit": 1})],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("statement.statements.0.minimum_due",),
        nl=("Agent explained minimum payments in general terms without promising fees or rates it had not read",))


def statements_unnamed(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A clarify statements: the customer does not say which account until asked."""
    accounts = _with_statements(db, subject["customer_id"])
    if len(accounts) < 2:
        return None
    account = rng.choice(accounts)
    others = [a["account_id"] for a in accounts if a["account_id"] != account["account_id"]]
    return _mission(
        "statements", "clarify",
        f"You want to see the latest statements of one of your accounts (your {_label(account)} account), but you "
        "only say which one when the agent asks.",
        [_call("statements", "get_statements", {"account_id": account["account_id"]})],
        known=(f"Your {_label(account)} account is {account['account_id']}; your other accounts are "
               f"{', '.join(others)}.",),
        communicate=("statements.statements.0.total_due", "statements.statements.0.due_date"),
        nl=("Agent asked which account the customer meant before reading statements",))


def fraud_signs_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat transactions: how to spot a charge you did not make, starting from the newest one."""
    accounts = _with_transactions(db, subject["customer_id"])
    if not accounts:
        return None
    account = rng.choice(accounts)
    return _mission(
        "transactions", "chat",
        "You want general advice on how to tell whether a charge on your statement is one you did not make, and who "
        f"the newest transaction on your {_label(account)} account was with.",
        [_call("review", "get_transactions", {"account_id": account["account_id"]})],
        known=(f"Your {_label(account)} account is {account['account_id']}.",),
        communicate=("review.transactions.0.merchant_or_payee",),
        nl=("Agent gave general advice on spotting unauthorized charges without accusing any merchant",))


def introduce(subject: dict[str, Any]) -> str:
    """The customer's identity sentence for known_info: name, phone number and date of birth."""
    return (f"You are {subject['full_name']} with phone number {subject['phone_number']}, "
            f"date of birth {subject['date_of_birth']}.")


def account(subject: dict[str, Any]) -> str:
    """The customer's bank account in a cross-domain task: the phone number the bank holds."""
    return f"Your bank knows you by phone number {subject['phone_number']}."


def address_fact(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Fact | None:
    """The address the bank has on file for the customer (read by the phone number the user states)."""
    fields = {"address1": "street", "city": "city", "state": "state", "zip": "postal_code"}
    return Fact("the address your bank has on file",
                _call("customer", "get_customer_by_phone", {"phone_number": subject["phone_number"]}),
                {f: f"address.{column}" for f, column in fields.items()})


MISSIONS = MissionSet({
    "authentication": authentication,
    "account_info": account_info,
    "transactions": transactions,
    "statements": statements,
    "payments": payments,
    "cards": cards,
    "dispute": dispute,
    "fraud_response": fraud_response,
    "insights": insights,
}, opener="authentication", introduce=introduce, account=account, facts={"address": address_fact},
    uses={"amount": FactUse("payments", payment_of_given)},
    variants={"account_info": (balance_question,), "statements": (minimum_payment_question, statements_unnamed),
              "transactions": (fraud_signs_question,)})
"""Goal label -> mission builder (every label of GOAL_TOOLS); tasks are about `customers` rows and most
start by identifying the customer. The variants give four goals chat missions and four clarify missions, so a types
plan reaches every MMTB type sequence of four goals."""

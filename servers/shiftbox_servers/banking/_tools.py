"""The 20 banking tools of the default tool set, over one episode's database; and `log_shift_event`
(`parity_tools`), which only the AgentChangeBench tool set (`_reference.py`) offers."""

from __future__ import annotations

from datetime import datetime, time
from typing import Annotated, Literal
from weakref import WeakKeyDictionary

from pydantic import Field

from shiftbox_servers.kit import (
    Conflict,
    Episode,
    InvalidArguments,
    IsoDate,
    IsoDateOrDateTime,
    NotFound,
    PreconditionFailed,
    ToolSet,
    add_transfer_tool,
    identifier,
    money,
    round_money,
    text,
)

from ._models import (
    Account,
    AccountList,
    Address,
    Card,
    Customer,
    CustomerList,
    Dispute,
    ParkedTask,
    Payee,
    PaymentRequest,
    ShiftEventLogged,
    Statement,
    StatementList,
    Transaction,
    TransactionList,
)
from ._phone import normalize_phone

tools = ToolSet()

CustomerId = identifier("customer id, e.g. cust_0001")
AccountId = identifier("account id, e.g. acc_00001")
CardId = identifier("card id, e.g. card_00001")
RequestId = identifier("payment request id")
Amount = money("amount in USD, at most 2 decimals")
ReasonCode = Literal[
    "unauthorized", "unauthorized_charge", "fraudulent", "suspicious", "duplicate_charge",
    "incorrect_amount", "goods_not_received", "canceled_service", "other",
]


# -- row -> model helpers --------------------------------------------------------------------------


def _customer(ep: Episode, customer_id: str) -> Customer:
    row = ep.query_one("SELECT * FROM customers WHERE customer_id = ?", (customer_id,))
    if row is None:
        raise NotFound(f"no customer with id {customer_id!r}", field="customer_id")
    return _customer_from_row(ep, row)


def _customer_from_row(ep: Episode, row) -> Customer:
    cid = row["customer_id"]
    account_ids = [r[0] for r in ep.query(
        "SELECT account_id FROM accounts WHERE customer_id = ? ORDER BY account_id", (cid,))]
    card_ids = [r[0] for r in ep.query(
        "SELECT c.card_id FROM cards c JOIN accounts a USING (account_id) "
        "WHERE a.customer_id = ? ORDER BY c.card_id", (cid,))]
    payee_ids = [r[0] for r in ep.query(
        "SELECT payee_id FROM payees WHERE customer_id = ? ORDER BY payee_id", (cid,))]
    statement_ids = [r[0] for r in ep.query(
        "SELECT s.statement_id FROM statements s JOIN accounts a USING (account_id) "
        "WHERE a.customer_id = ? ORDER BY s.statement_id", (cid,))]
    request_ids = [r[0] for r in ep.query(
        "SELECT request_id FROM payment_requests WHERE customer_id = ? ORDER BY request_id", (cid,))]
    dispute_ids = [r[0] for r in ep.query(
        "SELECT d.dispute_id FROM disputes d JOIN accounts a USING (account_id) "
        "WHERE a.customer_id = ? ORDER BY d.dispute_id", (cid,))]
    return Customer(
        customer_id=cid,
        full_name=row["full_name"],
        date_of_birth=row["date_of_birth"],
        email=row["email"],
        phone_number=row["phone_number"],
        address=Address(street=row["street"], city=row["city"], state=row["state"],
                        postal_code=row["postal_code"]),
        created_at=row["created_at"],
        account_ids=account_ids,
        card_ids=card_ids,
        statement_ids=statement_ids,
        payment_request_ids=request_ids,
        dispute_ids=dispute_ids,
        payee_ids=payee_ids,
    )


def _account(ep: Episode, account_id: str) -> Account:
    row = ep.query_one("SELECT * FROM accounts WHERE account_id = ?", (account_id,))
    if row is None:
        raise NotFound(f"no account with id {account_id!r}", field="account_id")
    return Account(**{**dict(row), "is_business": bool(row["is_business"])})


def _card(ep: Episode, card_id: str) -> Card:
    row = ep.query_one("SELECT * FROM cards WHERE card_id = ?", (card_id,))
    if row is None:
        raise NotFound(f"no card with id {card_id!r}", field="card_id")
    return Card(**dict(row))


def _payment_request(ep: Episode, request_id: str) -> PaymentRequest:
    row = ep.query_one("SELECT * FROM payment_requests WHERE request_id = ?", (request_id,))
    if row is None:
        raise NotFound(f"no payment request with id {request_id!r}", field="request_id")
    request = PaymentRequest(**dict(row))
    live = request.status in ("Awaiting Payment", "Authorized")
    if live and request.expires_at and request.expires_at <= ep.now_iso():
        ep.execute("UPDATE payment_requests SET status = 'Expired' WHERE request_id = ?", (request_id,))
        request.status = "Expired"
    return request


def _dispute(ep: Episode, dispute_id: str) -> Dispute:
    row = ep.query_one("SELECT * FROM disputes WHERE dispute_id = ?", (dispute_id,))
    if row is None:
        raise NotFound(f"no dispute with id {dispute_id!r}", field="dispute_id")
    return Dispute(**dict(row))


def _as_datetime(value: str, *, end_of_day: bool) -> str:
    """A date or date-time argument (already in snapshot time, see `IsoDateOrDateTime`) as a datetime string
    comparable with stored ones: a date is the start or, with `end_of_day`, the last microsecond of that day."""
    parsed = datetime.fromisoformat(value)
    if len(value) == 10:
        parsed = datetime.combine(parsed.date(), time.max if end_of_day else time.min)
    return parsed.isoformat()


# -- customers -------------------------------------------------------------------------------------


@tools.tool(read_only=True)
def get_customer_by_id(ep: Episode, customer_id: CustomerId) -> Customer:
    """Look up a customer profile by customer id.

    Returns name, date of birth, contact details, address and the ids of the customer's accounts,
    cards, statements, payment requests, disputes and payees. Verify the caller's identity before
    sharing any of it.
    """
    return _customer(ep, customer_id)


@tools.tool(read_only=True)
def get_customer_by_phone(
    ep: Episode,
    phone_number: text("phone number in any common US format", min_length=7, max_length=32),
) -> Customer:
    """Look up a customer by phone number.

    Accepts common formats ('555-123-4567', '+1 (555) 123-4567', '+15551234567'); the number is
    normalized to E.164 before the lookup.
    """
    e164 = normalize_phone(phone_number)
    if e164 is None:
        raise InvalidArguments(
            f"{phone_number!r} is not a US phone number; give 10 digits, e.g. 555-123-4567",
            field="phone_number",
        )
    row = ep.query_one("SELECT * FROM customers WHERE phone_number = ?", (e164,)) or next(
        (r for r in ep.query("SELECT * FROM customers ORDER BY customer_id")
         if normalize_phone(r["phone_number"]) == e164), None)  # a reference snapshot keeps numbers as typed
    if row is None:
        raise NotFound(f"no customer with phone number {e164}", field="phone_number")
    return _customer_from_row(ep, row)


@tools.tool(read_only=True)
def get_customer_by_name(
    ep: Episode,
    full_name: text("customer's full name (case-insensitive)", max_length=200),
    dob: IsoDate,
) -> CustomerList:
    """Search customers by full name and date of birth (both must match).

    Returns every matching customer (usually one; several when they share name and birth date, then
    tell them apart by another detail); an empty list when nobody matches.
    """
    rows = ep.query(
        "SELECT * FROM customers WHERE full_name = ? COLLATE NOCASE AND date_of_birth = ? ORDER BY customer_id",
        (" ".join(full_name.split()), dob),
    )
    return CustomerList(customers=[_customer_from_row(ep, row) for row in rows])


# -- accounts, statements, transactions ------------------------------------------------------------


@tools.tool(read_only=True)
def get_accounts(ep: Episode, customer_id: CustomerId) -> AccountList:
    """List all accounts a customer owns (type, status, masked number, balances)."""
    _customer(ep, customer_id)
    rows = ep.query("SELECT account_id FROM accounts WHERE customer_id = ? ORDER BY account_id",
                    (customer_id,))
    return AccountList(customer_id=customer_id, accounts=[_account(ep, r[0]) for r in rows])


@tools.tool(read_only=True)
def get_account(ep: Episode, account_id: AccountId) -> Account:
    """Get one account: type, status, masked number, current and available balance."""
    return _account(ep, account_id)


@tools.tool(read_only=True)
def get_statements(
    ep: Episode,
    account_id: AccountId,
    limit: Annotated[int, Field(ge=1, le=120, description="how many statements, newest first")] = 12,
) -> StatementList:
    """List an account's statements, newest first (period, total and minimum due, due date, status)."""
    _account(ep, account_id)
    rows = ep.query(
        "SELECT * FROM statements WHERE account_id = ? ORDER BY issue_date DESC, statement_id DESC LIMIT ?",
        (account_id, limit),
    )
    return StatementList(account_id=account_id, statements=[Statement(**dict(r)) for r in rows])


@tools.tool(read_only=True)
def get_transactions(
    ep: Episode,
    account_id: AccountId,
    start_time: IsoDateOrDateTime | None = None,
    end_time: IsoDateOrDateTime | None = None,
    limit: Annotated[int, Field(ge=1, le=500, description="how many transactions, newest first")] = 100,
) -> TransactionList:
    """List an account's transactions, newest first, optionally between start_time and end_time.

    A date-only end_time includes that whole day. Amounts are signed: debits are negative.
    """
    _account(ep, account_id)
    start = _as_datetime(start_time, end_of_day=False) if start_time else "0000"
    end = _as_datetime(end_time, end_of_day=True) if end_time else "9999"
    if start > end:
        raise InvalidArguments(f"start_time {start_time} is after end_time {end_time}", field="start_time")
    rows = ep.query(
        "SELECT * FROM transactions WHERE account_id = ? AND timestamp >= ? AND timestamp <= ? "
        "ORDER BY timestamp DESC, tx_id DESC LIMIT ?",
        (account_id, start, end, limit + 1),
    )
    return TransactionList(
        account_id=account_id,
        transactions=[Transaction(**dict(r)) for r in rows[:limit]],
        truncated=len(rows) > limit,
    )


# -- payees and payments ---------------------------------------------------------------------------


@tools.tool(read_only=False)
def add_payee(
    ep: Episode,
    customer_id: CustomerId,
    name: text("payee name as it should appear on payments", max_length=100),
    deliver_type: Literal["electronic", "check"] = "electronic",
) -> Payee:
    """Add a bill-pay payee for a customer; it is verified at once and can be paid right away.

    A customer cannot have two payees with the same name.
    """
    _customer(ep, customer_id)
    clean = " ".join(name.split())
    taken = ep.query_one(
        "SELECT payee_id FROM payees WHERE customer_id = ? AND name = ? COLLATE NOCASE", (customer_id, clean))
    if taken:
        raise Conflict(f"customer {customer_id} already has payee {clean!r} ({taken[0]})", field="name")
    return insert_payee(ep, customer_id, clean, deliver_type)


def insert_payee(ep: Episode, customer_id: str, name: str, deliver_type: str) -> Payee:
    """Store a verified payee for an existing customer (no checks: the tool sets decide what to accept)."""
    payee_id = ep.next_id("payees", "payee_id", "payee")
    ep.execute("INSERT INTO payees VALUES (?, ?, ?, ?, 1)", (payee_id, customer_id, name, deliver_type))
    return Payee(payee_id=payee_id, customer_id=customer_id, name=name, deliver_type=deliver_type,
                 verified=True)


@tools.tool(read_only=False)
def create_payment_request(
    ep: Episode,
    customer_id: CustomerId,
    from_account_id: AccountId,
    to_payee_id: identifier("payee id owned by the customer"),
    amount: Amount,
    expires_at: IsoDateOrDateTime | None = None,
) -> PaymentRequest:
    """Create a bill payment request (status 'Awaiting Payment') from a customer's account to a payee.

    The account and payee must belong to the customer and the account must be Active. A customer
    may have only one request awaiting payment at a time. Next: authorize_payment_request.
    """
    _customer(ep, customer_id)
    account = _account(ep, from_account_id)
    if account.customer_id != customer_id:
        raise PreconditionFailed(f"account {from_account_id} does not belong to customer {customer_id}",
                                 field="from_account_id")
    if account.status != "Active":
        raise PreconditionFailed(f"account {from_account_id} is {account.status}; payments need an Active account",
                                 field="from_account_id")
    payee = ep.query_one("SELECT customer_id FROM payees WHERE payee_id = ?", (to_payee_id,))
    if payee is None:
        raise NotFound(f"no payee with id {to_payee_id!r}", field="to_payee_id")
    if payee[0] != customer_id:
        raise PreconditionFailed(f"payee {to_payee_id} does not belong to customer {customer_id}",
                                 field="to_payee_id")
    expires = _as_datetime(expires_at, end_of_day=True) if expires_at else None
    now = ep.now_iso()
    if expires is not None and expires <= now:
        raise InvalidArguments(f"expires_at {expires_at} is not in the future (now is {now})", field="expires_at")
    pending = ep.query_one(
        "SELECT request_id FROM payment_requests WHERE customer_id = ? AND status = 'Awaiting Payment'",
        (customer_id,))
    if pending:
        raise Conflict(f"customer {customer_id} already has request {pending[0]} awaiting payment; "
                       "authorize and pay it or cancel it first")
    request_id = ep.next_id("payment_requests", "request_id", "req")
    ep.execute(
        "INSERT INTO payment_requests (request_id, customer_id, from_account_id, to_payee_id, amount, "
        "status, origin, created_at, expires_at) VALUES (?, ?, ?, ?, ?, 'Awaiting Payment', 'agent', ?, ?)",
        (request_id, customer_id, from_account_id, to_payee_id, amount, now, expires),
    )
    return _payment_request(ep, request_id)


@tools.tool(read_only=True)
def check_payment_request(ep: Episode, request_id: RequestId) -> PaymentRequest:
    """Get a payment request's status, amount, accounts and (once settled) its transaction id."""
    return _payment_request(ep, request_id)


@tools.tool(read_only=False, idempotent=True)
def authorize_payment_request(ep: Episode, request_id: RequestId) -> PaymentRequest:
    """Authorize a request that is 'Awaiting Payment' (-> 'Authorized'). Next: make_payment."""
    request = _payment_request(ep, request_id)
    if request.status == "Authorized":
        return request
    if request.status != "Awaiting Payment":
        raise PreconditionFailed(f"request {request_id} is {request.status}; only a request awaiting "
                                 "payment can be authorized")
    ep.execute("UPDATE payment_requests SET status = 'Authorized' WHERE request_id = ?", (request_id,))
    return _payment_request(ep, request_id)


@tools.tool(read_only=False, destructive=True)
def make_payment(ep: Episode, request_id: RequestId) -> PaymentRequest:
    """Pay an 'Authorized' request: debits the account and settles the request.

    If the available balance is too low the request becomes 'Failed' (returned, with the reason),
    and nothing is debited.
    """
    request = _payment_request(ep, request_id)
    if request.status != "Authorized":
        raise PreconditionFailed(f"request {request_id} is {request.status}; authorize it before paying")
    account = _account(ep, request.from_account_id)
    if account.status != "Active":
        raise PreconditionFailed(f"account {account.account_id} is {account.status}; it cannot pay")
    if account.available_balance < request.amount:
        reason = (f"insufficient available balance: {account.available_balance:.2f} < {request.amount:.2f}")
        ep.execute("UPDATE payment_requests SET status = 'Failed', failure_reason = ? WHERE request_id = ?",
                   (reason, request_id))
        return _payment_request(ep, request_id)
    payee_name = ep.query_one("SELECT name FROM payees WHERE payee_id = ?", (request.to_payee_id,))[0]
    tx_id = ep.next_id("transactions", "tx_id", "tx")
    ep.execute(
        "INSERT INTO transactions VALUES (?, ?, ?, 'billpay', ?, ?, 'Posted', ?)",
        (tx_id, account.account_id, ep.now_iso(), -request.amount, payee_name, request_id),
    )
    ep.execute(
        "UPDATE accounts SET current_balance = ?, available_balance = ? WHERE account_id = ?",
        (round_money(account.current_balance - request.amount),
         round_money(account.available_balance - request.amount), account.account_id),
    )
    ep.execute("UPDATE payment_requests SET status = 'Settled', settled_tx_id = ? WHERE request_id = ?",
               (tx_id, request_id))
    return _payment_request(ep, request_id)


@tools.tool(read_only=False, idempotent=True)
def cancel_payment_request(ep: Episode, request_id: RequestId) -> PaymentRequest:
    """Cancel a payment request that has not been paid. Settled requests cannot be canceled;
    canceling a Failed, Canceled or Expired request changes nothing."""
    request = _payment_request(ep, request_id)
    if request.status == "Settled":
        raise PreconditionFailed(f"request {request_id} is already Settled; a settled payment cannot be "
                                 "canceled (file a dispute or transfer to a human agent)")
    if request.status in ("Failed", "Canceled", "Expired"):
        return request
    ep.execute("UPDATE payment_requests SET status = 'Canceled' WHERE request_id = ?", (request_id,))
    return _payment_request(ep, request_id)


# -- cards -----------------------------------------------------------------------------------------


@tools.tool(read_only=False, idempotent=True)
def lock_card(
    ep: Episode,
    card_id: CardId,
    reason: text("why the card is locked, e.g. 'lost' or 'suspected fraud'", max_length=200) | None = None,
) -> Card:
    """Lock a card so it cannot be used (idempotent: locking a locked card changes nothing)."""
    card = _card(ep, card_id)
    if card.status == "Closed":
        raise PreconditionFailed(f"card {card_id} is Closed and cannot be locked")
    if card.status == "Active":
        ep.execute("UPDATE cards SET status = 'Locked', lock_reason = ? WHERE card_id = ?", (reason, card_id))
    return _card(ep, card_id)


@tools.tool(read_only=False, idempotent=True)
def unlock_card(ep: Episode, card_id: CardId) -> Card:
    """Unlock a locked card (idempotent: unlocking an active card changes nothing)."""
    card = _card(ep, card_id)
    if card.status == "Closed":
        raise PreconditionFailed(f"card {card_id} is Closed and cannot be unlocked")
    if card.status == "Locked":
        ep.execute("UPDATE cards SET status = 'Active', lock_reason = NULL WHERE card_id = ?", (card_id,))
    return _card(ep, card_id)


# -- disputes --------------------------------------------------------------------------------------


@tools.tool(read_only=False)
def file_dispute(ep: Episode, account_id: AccountId, tx_id: identifier("transaction id"),
                 reason_code: ReasonCode) -> Dispute:
    """Dispute a transaction on an account. Creates a dispute (status 'Submitted') and marks the
    transaction 'Disputed'. The transaction must belong to the account, be a debit, and not be
    disputed or reversed already. Returns the dispute id."""
    _account(ep, account_id)
    tx = ep.query_one("SELECT * FROM transactions WHERE tx_id = ?", (tx_id,))
    if tx is None:
        raise NotFound(f"no transaction with id {tx_id!r}", field="tx_id")
    if tx["account_id"] != account_id:
        raise PreconditionFailed(f"transaction {tx_id} is not on account {account_id}", field="tx_id")
    existing = ep.query_one("SELECT dispute_id FROM disputes WHERE tx_id = ?", (tx_id,))
    if tx["status"] == "Disputed" or existing:
        which = f" ({existing[0]})" if existing else ""
        raise Conflict(f"transaction {tx_id} is already disputed{which}", field="tx_id")
    if tx["status"] == "Reversed":
        raise PreconditionFailed(f"transaction {tx_id} was already reversed; there is nothing to dispute")
    if tx["amount"] >= 0:
        raise PreconditionFailed(f"transaction {tx_id} is a credit of {tx['amount']:.2f}; only debits can be "
                                 "disputed")
    dispute_id = ep.next_id("disputes", "dispute_id", "disp")
    ep.execute("INSERT INTO disputes VALUES (?, ?, ?, ?, 'Submitted', ?)",
               (dispute_id, account_id, tx_id, reason_code, ep.now_iso()))
    ep.execute("UPDATE transactions SET status = 'Disputed' WHERE tx_id = ?", (tx_id,))
    return _dispute(ep, dispute_id)


@tools.tool(read_only=True)
def get_dispute(ep: Episode, dispute_id: identifier("dispute id")) -> Dispute:
    """Get a dispute's status, reason and the transaction it concerns."""
    return _dispute(ep, dispute_id)


# -- conversation bookkeeping ----------------------------------------------------------------------


@tools.tool(read_only=False)
def park_task(
    ep: Episode,
    current_task_id: text("a short name for the task being put aside", max_length=100),
    resume_hint: text("what remains to be done when resuming", max_length=500) | None = None,
) -> ParkedTask:
    """Put the current task aside (e.g. when the customer changes topic) so it can be resumed later."""
    parked_id = ep.next_id("parked_tasks", "parked_task_id", "park")
    ep.execute("INSERT INTO parked_tasks VALUES (?, ?, ?, 'Parked', ?, NULL)",
               (parked_id, current_task_id, resume_hint, ep.now_iso()))
    return ParkedTask(**dict(ep.query_one("SELECT * FROM parked_tasks WHERE parked_task_id = ?", (parked_id,))))


@tools.tool(read_only=False)
def resume_task(ep: Episode, parked_task_id: identifier("id returned by park_task")) -> ParkedTask:
    """Resume a parked task; returns its name and resume hint."""
    row = ep.query_one("SELECT * FROM parked_tasks WHERE parked_task_id = ?", (parked_task_id,))
    if row is None:
        raise NotFound(f"no parked task with id {parked_task_id!r}", field="parked_task_id")
    if row["status"] == "Resumed":
        raise PreconditionFailed(f"task {parked_task_id} was already resumed at {row['resumed_at']}")
    ep.execute("UPDATE parked_tasks SET status = 'Resumed', resumed_at = ? WHERE parked_task_id = ?",
               (ep.now_iso(), parked_task_id))
    return ParkedTask(**dict(ep.query_one("SELECT * FROM parked_tasks WHERE parked_task_id = ?",
                                          (parked_task_id,))))


add_transfer_tool(tools, party="customer", description="""\
Hand the conversation to a human agent, with a summary. Use only when the request is outside
policy or your tools; after calling it, tell the customer they are being transferred.""")


# -- the reference's shift log, for `--toolset agentchangebench` (_reference.py) -----------------------

parity_tools = ToolSet()
"""The reference's banking tool that the default set leaves out (the AgentChangeBench tool set uses it)."""
_shift_events: WeakKeyDictionary[Episode, list[dict]] = WeakKeyDictionary()


@parity_tools.tool(read_only=False)
def log_shift_event(
    ep: Episode,
    turn_no: Annotated[int, Field(ge=0, le=10_000, description="the conversation turn where you noticed the shift")],
    from_class: text("what the customer wanted before, e.g. 'TransactionResolver'", max_length=100),
    to_class: text("what the customer wants now, e.g. 'SecurityEducator'", max_length=100),
    trigger_terms: Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(
        max_length=20, description="the customer's words that showed the shift")],
    requires_reauth: Annotated[bool, Field(description="whether the new request needs the customer "
                                                       "verified again")],
) -> ShiftEventLogged:
    """Record that you detected a shift in the customer's goal (for evaluation; it changes no account).

    Returns whether it was logged and how many shifts this conversation has logged so far.
    """
    events = _shift_events.setdefault(ep, [])
    events.append({"turn_no": turn_no, "from_class": from_class, "to_class": to_class,
                   "trigger_terms": list(trigger_terms), "requires_reauth": requires_reauth})
    return ShiftEventLogged(logged=True, count=len(events))

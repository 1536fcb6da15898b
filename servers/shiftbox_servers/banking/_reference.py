"""The AgentChangeBench tool set (`--toolset agentchangebench`): the reference's banking tools as they were.

Same names, arguments, result shapes, error messages and matching rules as AgentChangeBench's
`BankingTools`: phone numbers match the stored string exactly, names match case-insensitively but
otherwise exactly, an empty optional string means "not given", lists of an unknown account are empty,
writes answer with the reference's small records. Each tool is a thin adapter: it checks what the
reference checks (with its wording) and then runs the default tool set's logic, so the state a call
leaves is the one the default tools would leave. Where the reference crashed (`file_dispute` always,
`get_transactions` with a time filter) shiftbox does the job: rows of docs/servers.md's table of
deliberate differences.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, model_serializer

from shiftbox_servers.kit import (
    Episode,
    InvalidArguments,
    IsoDateOrDateTime,
    NotFound,
    PreconditionFailed,
    ToolSet,
)

from . import _tools as native
from ._models import (
    AccountStatus,
    AccountType,
    Customer,
    CustomerList,
    Dispute,
    Statement,
    Transaction,
)

reference_tools = ToolSet()
"""The reference's 21 banking tools, in its order."""
_TIME = TypeAdapter(IsoDateOrDateTime)


class Account(BaseModel):  # the reference's fields: no is_business
    account_id: str
    customer_id: str
    type: AccountType
    masked_number: str
    status: AccountStatus
    current_balance: float
    available_balance: float


class Accounts(BaseModel):
    accounts: list[Account]


class Statements(BaseModel):
    statements: list[Statement]


class Transactions(BaseModel):
    transactions: list[Transaction]


class PaymentRequest(BaseModel):  # the reference's fields, in its order: no settled_tx_id, failure_reason
    request_id: str
    origin: str
    customer_id: str
    from_account_id: str
    to_payee_id: str
    amount: float
    status: str
    created_at: str
    expires_at: str | None


class PayeeAdded(BaseModel):
    payee_id: str
    verified: bool


class RequestStatus(BaseModel):
    request_id: str
    status: str


class PaymentMade(BaseModel):
    request_id: str
    status: str
    tx_id: str | None = None
    reason: str | None = None

    @model_serializer(mode="wrap")
    def _only_given(self, handler):  # the reference answers {request_id, status, tx_id} or {…, reason}
        return {k: v for k, v in handler(self).items() if v is not None}


class CardStatus(BaseModel):
    card_id: str
    status: str


class DisputeFiled(BaseModel):
    dispute_id: str
    status: str


class ParkedTaskId(BaseModel):
    parked_task_id: str


class ParkedTaskMetadata(BaseModel):
    task_id: str
    resume_hint: str | None
    parked_at: str


class ResumedTask(BaseModel):
    status: str
    metadata: ParkedTaskMetadata


# -- the reference's lookups and their messages ----------------------------------------------------


def _require(ep: Episode, table: str, column: str, value: str, message: str) -> None:
    if ep.query_one(f"SELECT 1 FROM {table} WHERE {column} = ?", (value,)) is None:  # noqa: S608 (fixed names)
        raise NotFound(message, field=column)


def _customer_row(ep: Episode, customer_id: str):
    row = ep.query_one("SELECT * FROM customers WHERE customer_id = ?", (customer_id,))
    if row is None:
        raise NotFound(f"Customer {customer_id} not found. Have you tried asking the customer for their id?",
                       field="customer_id")
    return row


def _require_account(ep: Episode, account_id: str) -> None:
    _require(ep, "accounts", "account_id", account_id,
             f"Account {account_id} not found. Have you tried asking the customer for their account id?")


def _require_request(ep: Episode, request_id: str):
    _require(ep, "payment_requests", "request_id", request_id, f"Payment request {request_id} not found")
    return native._payment_request(ep, request_id)


def _as(model: type[BaseModel], value: BaseModel):
    """A default tool's record with only the reference's fields."""
    return model.model_validate(value.model_dump())


def _require_card(ep: Episode, card_id: str) -> None:
    _require(ep, "cards", "card_id", card_id, f"Card {card_id} not found")


def _given(value: str | None) -> str | None:
    """The reference tests optional arguments for truth: an empty string is not given."""
    return value or None


# -- lookups ---------------------------------------------------------------------------------------


@reference_tools.tool(read_only=True)
def get_customer_by_id(ep: Episode, customer_id: Annotated[str, Field(description="the customer id, e.g. "
                                                                                     "'cust_001'")]) -> Customer:
    """Retrieve a customer by their unique customer ID: accounts, cards and contact information."""
    return native._customer_from_row(ep, _customer_row(ep, customer_id))


@reference_tools.tool(read_only=True)
def get_customer_by_phone(ep: Episode, phone_number: Annotated[str, Field(
        description="the complete phone number exactly as registered, e.g. '+15551234567' or '555-123-7890'")],
) -> Customer:
    """Retrieve a customer by their complete registered phone number (the exact string, not partial digits)."""
    row = ep.query_one("SELECT * FROM customers WHERE phone_number = ? ORDER BY customer_id", (phone_number,))
    if row is None:
        raise NotFound(f"Customer with phone {phone_number} not found. Have you tried asking the customer for "
                       "their phone?", field="phone_number")
    return native._customer_from_row(ep, row)


@reference_tools.tool(read_only=True)
def get_customer_by_name(
    ep: Episode,
    full_name: Annotated[str, Field(description="the complete full name, e.g. 'Maria Santos'")],
    dob: Annotated[str, Field(description="date of birth as YYYY-MM-DD, e.g. '1986-02-11'")],
) -> CustomerList:
    """Search customers by exact full name (any case) and date of birth; every match, or an empty list."""
    rows = ep.query("SELECT * FROM customers WHERE date_of_birth = ? ORDER BY customer_id", (dob,))
    return CustomerList(customers=[native._customer_from_row(ep, r) for r in rows
                                   if r["full_name"].lower() == full_name.lower()])


# -- accounts, statements, transactions ------------------------------------------------------------


@reference_tools.tool(read_only=True)
def get_accounts(ep: Episode, customer_id: Annotated[str, Field(description="the customer id")]) -> Accounts:
    """Retrieve all accounts owned by a customer (checking, savings, credit card)."""
    _customer_row(ep, customer_id)
    return Accounts(accounts=[_as(Account, a) for a in native.get_accounts(ep, customer_id).accounts])


@reference_tools.tool(read_only=True)
def get_account(ep: Episode, account_id: Annotated[str, Field(description="the account id, e.g. 'acc_001'")],
                ) -> Account:
    """Retrieve one account: balance, status and account type."""
    _require_account(ep, account_id)
    return _as(Account, native.get_account(ep, account_id))


@reference_tools.tool(read_only=True)
def get_statements(
    ep: Episode,
    account_id: Annotated[str, Field(description="the account id")],
    limit: Annotated[int, Field(description="most statements to return")] = 12,
) -> Statements:
    """Recent statements of an account, newest first (an unknown account has none)."""
    rows = ep.query("SELECT * FROM statements WHERE account_id = ? ORDER BY issue_date DESC, statement_id DESC",
                    (account_id,))
    return Statements(statements=[Statement(**dict(r)) for r in rows][:limit])


@reference_tools.tool(read_only=True)
def get_transactions(
    ep: Episode,
    account_id: Annotated[str, Field(description="the account id")],
    start_time: Annotated[str | None, Field(description="optional start date/time")] = None,
    end_time: Annotated[str | None, Field(description="optional end date/time")] = None,
    limit: Annotated[int, Field(description="most transactions to return")] = 100,
) -> Transactions:
    """Recent transactions of an account, newest first, optionally between start_time and end_time."""
    listed = ep.query_one("SELECT COUNT(*) FROM transactions WHERE account_id = ?", (account_id,))[0]
    if not listed or limit < 1:  # the reference filters nothing, so an unknown account lists nothing
        return Transactions(transactions=[])
    try:
        start, end = (_TIME.validate_python(t) if t else None for t in (_given(start_time), _given(end_time)))
    except ValidationError as exc:
        raise InvalidArguments(f"start_time/end_time: {exc.errors()[0]['msg']}", field="start_time") from None
    try:
        return Transactions(transactions=native.get_transactions(ep, account_id, start, end, limit).transactions)
    except InvalidArguments:  # start after end: nothing is in between
        return Transactions(transactions=[])


# -- payees and payments ---------------------------------------------------------------------------


@reference_tools.tool(read_only=False)
def add_payee(
    ep: Episode,
    customer_id: Annotated[str, Field(description="the customer id")],
    name: Annotated[str, Field(description="the payee name, e.g. 'Electric Company'")],
    deliver_type: Annotated[str, Field(description="'electronic' or 'check'")] = "electronic",
) -> PayeeAdded:
    """Add a bill pay payee for a customer; new payees are verified at once."""
    _customer_row(ep, customer_id)
    if deliver_type not in ("electronic", "check"):
        raise InvalidArguments("deliver_type must be 'electronic' or 'check'", field="deliver_type")
    payee = native.insert_payee(ep, customer_id, name, deliver_type)
    return PayeeAdded(payee_id=payee.payee_id, verified=payee.verified)


@reference_tools.tool(read_only=False)
def create_payment_request(
    ep: Episode,
    customer_id: Annotated[str, Field(description="the customer id")],
    from_account_id: Annotated[str, Field(description="the source account id")],
    to_payee_id: Annotated[str, Field(description="the payee id")],
    amount: Annotated[float, Field(description="the amount, positive")],
    expires_at: IsoDateOrDateTime | None = None,
) -> RequestStatus:
    """Create a bill payment request with status 'Awaiting Payment'."""
    _customer_row(ep, customer_id)
    if not ep.query_one("SELECT 1 FROM accounts WHERE account_id = ? AND customer_id = ?",
                        (from_account_id, customer_id)):
        raise PreconditionFailed(f"Account {from_account_id} is not owned by customer {customer_id}")
    if not ep.query_one("SELECT 1 FROM payees WHERE payee_id = ? AND customer_id = ?", (to_payee_id, customer_id)):
        raise PreconditionFailed(f"Payee {to_payee_id} is not owned by customer {customer_id}")
    if native._account(ep, from_account_id).status != "Active":
        raise PreconditionFailed("Source account must be Active")
    if amount <= 0:
        raise InvalidArguments("Amount must be positive", field="amount")
    if ep.query_one("SELECT 1 FROM payment_requests WHERE customer_id = ? AND status = 'Awaiting Payment'",
                    (customer_id,)):
        raise PreconditionFailed("Another payment request is already Awaiting Payment for this customer")
    request = native.create_payment_request(ep, customer_id, from_account_id, to_payee_id, amount, expires_at)
    return RequestStatus(request_id=request.request_id, status=request.status)


@reference_tools.tool(read_only=True)
def check_payment_request(ep: Episode, request_id: Annotated[str, Field(description="the request id")],
                          ) -> PaymentRequest:
    """Return the current state of a payment request."""
    return _as(PaymentRequest, _require_request(ep, request_id))


@reference_tools.tool(read_only=False)
def authorize_payment_request(ep: Episode, request_id: Annotated[str, Field(description="the request id")],
                              ) -> RequestStatus:
    """Mark a request awaiting payment as Authorized (e.g. the customer approved it in-channel)."""
    if _require_request(ep, request_id).status != "Awaiting Payment":
        raise PreconditionFailed(f"Request {request_id} is not Awaiting Payment")
    request = native.authorize_payment_request(ep, request_id)
    return RequestStatus(request_id=request_id, status=request.status)


@reference_tools.tool(read_only=False, destructive=True)
def make_payment(ep: Episode, request_id: Annotated[str, Field(description="the request id")]) -> PaymentMade:
    """Settle an Authorized request: debit the account, record a bill-pay transaction (Failed when funds are
    insufficient)."""
    if _require_request(ep, request_id).status != "Authorized":
        raise PreconditionFailed("Request must be AUTHORIZED before payment")
    request = native.make_payment(ep, request_id)
    if request.status == "Failed":
        return PaymentMade(request_id=request_id, status=request.status, reason="insufficient_funds")
    return PaymentMade(request_id=request_id, status=request.status, tx_id=request.settled_tx_id)


@reference_tools.tool(read_only=False)
def cancel_payment_request(ep: Episode, request_id: Annotated[str, Field(description="the request id")],
                           ) -> RequestStatus:
    """Cancel a payment request that is not settled (a failed or canceled one stays as it is)."""
    _require_request(ep, request_id)
    try:
        request = native.cancel_payment_request(ep, request_id)
    except PreconditionFailed:
        raise PreconditionFailed("Cannot cancel a settled payment") from None
    return RequestStatus(request_id=request_id, status=request.status)


# -- cards -----------------------------------------------------------------------------------------


@reference_tools.tool(read_only=False)
def lock_card(
    ep: Episode,
    card_id: Annotated[str, Field(description="the card id")],
    reason: Annotated[str | None, Field(description="optional reason")] = None,
) -> CardStatus:
    """Lock a debit or credit card (locking a locked card changes nothing)."""
    _require_card(ep, card_id)
    card = native.lock_card(ep, card_id, _given(reason))
    return CardStatus(card_id=card_id, status=card.status)


@reference_tools.tool(read_only=False)
def unlock_card(ep: Episode, card_id: Annotated[str, Field(description="the card id")]) -> CardStatus:
    """Unlock a locked debit or credit card (policy confirmation happens outside this tool)."""
    _require_card(ep, card_id)
    card = native.unlock_card(ep, card_id)
    return CardStatus(card_id=card_id, status=card.status)


# -- disputes --------------------------------------------------------------------------------------


@reference_tools.tool(read_only=False)
def file_dispute(
    ep: Episode,
    account_id: Annotated[str, Field(description="the account holding the transaction")],
    tx_id: Annotated[str, Field(description="the transaction to dispute")],
    reason_code: Annotated[str, Field(description="e.g. 'unauthorized', 'incorrect_amount', 'duplicate_charge' "
                                                  "or 'goods_not_received'")],
) -> DisputeFiled:
    """File a dispute for a transaction of an account; the transaction is marked as disputed."""
    _require_account(ep, account_id)
    if not ep.query_one("SELECT 1 FROM transactions WHERE tx_id = ? AND account_id = ?", (tx_id, account_id)):
        raise NotFound(f"Transaction {tx_id} not found for account {account_id}", field="tx_id")
    dispute = native.file_dispute(ep, account_id, tx_id, reason_code)
    return DisputeFiled(dispute_id=dispute.dispute_id, status=dispute.status)


@reference_tools.tool(read_only=True)
def get_dispute(ep: Episode, dispute_id: Annotated[str, Field(description="the dispute id")]) -> Dispute:
    """Get dispute details."""
    _require(ep, "disputes", "dispute_id", dispute_id, f"Dispute {dispute_id} not found")
    return native.get_dispute(ep, dispute_id)


# -- conversation bookkeeping ----------------------------------------------------------------------

reference_tools.specs["log_shift_event"] = native.parity_tools.specs["log_shift_event"]


@reference_tools.tool(read_only=False)
def park_task(
    ep: Episode,
    current_task_id: Annotated[str, Field(description="the task being put aside")],
    resume_hint: Annotated[str | None, Field(description="optional hint for resuming")] = None,
) -> ParkedTaskId:
    """Park the current task; returns a parked_task_id to resume it later."""
    return ParkedTaskId(parked_task_id=native.park_task(ep, current_task_id, resume_hint).parked_task_id)


@reference_tools.tool(read_only=False)
def resume_task(ep: Episode, parked_task_id: Annotated[str, Field(description="the parked task id")],
                ) -> ResumedTask:
    """Resume a parked task; returns its stored metadata."""
    _require(ep, "parked_tasks", "parked_task_id", parked_task_id, f"Parked task {parked_task_id} not found")
    row = ep.query_one("SELECT * FROM parked_tasks WHERE parked_task_id = ?", (parked_task_id,))
    if row["status"] == "Parked":
        native.resume_task(ep, parked_task_id)
    return ResumedTask(status="Resumed", metadata=ParkedTaskMetadata(
        task_id=row["current_task_id"], resume_hint=row["resume_hint"], parked_at=row["parked_at"]))


@reference_tools.tool(read_only=False)
def transfer_to_human_agents(ep: Episode, summary: Annotated[str, Field(description="summary of the issue")],
                             ) -> str:
    """Transfer the user to a human agent with a summary. Policy decides when it is allowed."""
    native.tools.specs["transfer_to_human_agents"].fn(ep, summary)
    return "Transfer successful"

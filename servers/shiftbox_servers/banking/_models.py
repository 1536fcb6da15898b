"""Typed structured outputs of the banking tools (what `outputSchema` publishes)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

AccountType = Literal["checking", "savings", "credit_card"]
AccountStatus = Literal["Active", "Frozen", "Closed"]
CardStatus = Literal["Active", "Locked", "Closed"]
PaymentStatus = Literal["Awaiting Payment", "Authorized", "Settled", "Canceled", "Expired", "Failed"]
DisputeStatus = Literal[
    "Draft", "Submitted", "Under Review", "Resolved-Customer Favor", "Resolved-Merchant Favor", "Closed"
]


class Address(BaseModel):
    street: str
    city: str
    state: str
    postal_code: str


class Customer(BaseModel):
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    created_at: str
    account_ids: list[str]
    card_ids: list[str]
    statement_ids: list[str]
    payment_request_ids: list[str]
    dispute_ids: list[str]
    payee_ids: list[str]


class CustomerList(BaseModel):
    customers: list[Customer]


class Account(BaseModel):
    account_id: str
    customer_id: str
    type: AccountType
    is_business: bool
    masked_number: str
    status: AccountStatus
    current_balance: float
    available_balance: float


class AccountList(BaseModel):
    customer_id: str
    accounts: list[Account]


class Card(BaseModel):
    card_id: str
    account_id: str
    type: Literal["debit", "credit"]
    last4: str
    status: CardStatus
    lock_reason: str | None


class Statement(BaseModel):
    statement_id: str
    account_id: str
    period_start: str
    period_end: str
    issue_date: str
    total_due: float
    minimum_due: float
    due_date: str
    status: Literal["Issued", "Paid", "Overdue"]


class StatementList(BaseModel):
    account_id: str
    statements: list[Statement]


class Transaction(BaseModel):
    tx_id: str
    account_id: str
    timestamp: str
    type: str
    amount: float
    merchant_or_payee: str
    status: Literal["Pending", "Posted", "Reversed", "Disputed"]
    reference: str


class TransactionList(BaseModel):
    account_id: str
    transactions: list[Transaction]
    truncated: bool


class Payee(BaseModel):
    payee_id: str
    customer_id: str
    name: str
    deliver_type: Literal["electronic", "check"]
    verified: bool


class PaymentRequest(BaseModel):
    request_id: str
    customer_id: str
    from_account_id: str
    to_payee_id: str
    amount: float
    status: PaymentStatus
    origin: str
    created_at: str
    expires_at: str | None
    settled_tx_id: str | None
    failure_reason: str | None


class Dispute(BaseModel):
    dispute_id: str
    account_id: str
    tx_id: str
    reason_code: str
    status: DisputeStatus
    opened_at: str


class ParkedTask(BaseModel):
    parked_task_id: str
    current_task_id: str
    resume_hint: str | None
    status: Literal["Parked", "Resumed"]
    parked_at: str
    resumed_at: str | None



class ShiftEventLogged(BaseModel):
    logged: bool
    count: int

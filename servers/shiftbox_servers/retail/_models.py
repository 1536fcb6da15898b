"""Typed structured outputs of the retail tools (what `outputSchema` publishes).

Shapes follow tau2's retail data model (users, orders, products as JSON objects keyed the same way), so
transcripts and tasks written against tau2 read the same fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

OrderStatus = Literal[
    "pending", "processed", "delivered", "cancelled", "pending (item modified)", "exchange requested",
    "return requested",
]
CancelReason = Literal["no longer needed", "ordered by mistake"]


class Address(BaseModel):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class UserName(BaseModel):
    first_name: str
    last_name: str


class CreditCard(BaseModel):
    source: Literal["credit_card"]
    id: str
    brand: str
    last_four: str


class GiftCard(BaseModel):
    source: Literal["gift_card"]
    id: str
    balance: float


class PayPal(BaseModel):
    source: Literal["paypal"]
    id: str


PaymentMethod = Annotated[CreditCard | GiftCard | PayPal, Field(discriminator="source")]


class User(BaseModel):
    user_id: str
    name: UserName
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod] = Field(description="payment method id -> method")
    orders: list[str] = Field(description="ids of the user's orders")


class UserId(BaseModel):
    user_id: str


class UserIds(BaseModel):
    user_ids: list[str]


class Variant(BaseModel):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(BaseModel):
    name: str
    product_id: str
    variants: dict[str, Variant] = Field(description="item id -> variant")


class ProductTypes(BaseModel):
    product_types: dict[str, str] = Field(description="product name -> product id, sorted by name")


class OrderItem(BaseModel):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(BaseModel):
    tracking_id: list[str]
    item_ids: list[str]


class OrderPayment(BaseModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(BaseModel):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    status: OrderStatus
    fulfillments: list[Fulfillment]
    payment_history: list[OrderPayment]
    cancel_reason: CancelReason | None = None
    exchange_items: list[str] | None = Field(None, description="item ids to be exchanged, sorted")
    exchange_new_items: list[str] | None = Field(None, description="item ids asked for, sorted")
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = Field(
        None, description="new minus old prices: > 0 the user pays it, < 0 it is refunded")
    return_items: list[str] | None = Field(None, description="item ids to be returned, sorted")
    return_payment_method_id: str | None = None


class Calculation(BaseModel):
    expression: str
    result: float = Field(description="the value, rounded to 2 decimals")


"""The banking tools' dependency graph: every tool's preconditions and postconditions (written into its
description in dependency-graph mode; docs/servers.md renders them), and the steps `--graph-refusal` enforces.

Authentication is described before account actions but never refused without it: in 49 of the 150 committed
generated tasks (snapshots/banking/v1/tasks.json) the gold calls act on an account, card or request the
customer names before any customer lookup, or with none, so the oracle could not solve them; only the
payment workflow and the parked-task pair are enforced.
"""

from shiftbox_servers.kit import conditions, dependency_graph, transfer_conditions

_CUSTOMER = ("get_customer_by_id", "get_customer_by_phone", "get_customer_by_name")
_ACCOUNT = ("get_accounts", "get_account")
_REQUEST = ("create_payment_request", "check_payment_request")

DEPENDENCIES = dependency_graph(
    {
        "authorize_payment_request": [_REQUEST],
        "resume_task": ["park_task"],
    },
    {
        "get_customer_by_id": conditions("the customer's profile is known", pre="the customer id is known"),
        "get_customer_by_phone": conditions("the customer's profile is known", pre="the phone number is known"),
        "get_customer_by_name": conditions("the matching customers' profiles are known",
                                           pre="the full name and date of birth are known"),
        "get_accounts": conditions("the customer's accounts are known: type, status, masked number, balances",
                                   after=[_CUSTOMER]),
        "get_account": conditions("the account's type, status and balances are known",
                                  pre="the account id is known (the customer's account list gives it)",
                                  after=["get_accounts"]),
        "get_statements": conditions("the account's statements are known, newest first", after=[_ACCOUNT]),
        "get_transactions": conditions("the account's transactions are known, newest first", after=[_ACCOUNT]),
        "add_payee": conditions("the payee exists, verified, and can be paid; its id is returned",
                                pre="the customer confirmed the payee's name and delivery type", after=[_CUSTOMER]),
        "create_payment_request": conditions(
            "a payment request exists with status 'Awaiting Payment'; its id is returned",
            pre="the paying account and the payee are known, and the customer confirmed the amount",
            after=[_CUSTOMER, _ACCOUNT]),
        "check_payment_request": conditions(
            "the request's status, amount and accounts are known (and its transaction once settled)",
            pre="the request id is known (the customer gives it, or creating the request returned it)",
            after=["create_payment_request"]),
        "authorize_payment_request": conditions(
            "the request's status is 'Authorized'", pre="the request is 'Awaiting Payment'"),
        "make_payment": conditions("the account is debited and the request settled",
                                   pre="the request is 'Authorized'", after=["authorize_payment_request"]),
        "cancel_payment_request": conditions("the request is cancelled", pre="the request has not been paid",
                                             after=[_REQUEST]),
        "lock_card": conditions("the card is locked", pre="the card id is known and the customer asked for it",
                                after=[_CUSTOMER]),
        "unlock_card": conditions("the card is active", pre="the card id is known and the customer asked for it",
                                  after=[_CUSTOMER]),
        "file_dispute": conditions("a dispute exists with status 'Submitted' and the transaction is marked disputed",
                                   pre="the customer identified the transaction and the reason",
                                   after=["get_transactions"]),
        "get_dispute": conditions("the dispute's status, reason and transaction are known",
                                  pre="the dispute id is known (the customer gives it, or filing returned it)",
                                  after=["file_dispute"]),
        "park_task": conditions("the current task is parked and can be resumed later",
                                pre="the customer turned to another topic before this one was done"),
        "resume_task": conditions("the parked task is current again; its name and resume hint are returned",
                                  pre="the customer came back to the parked topic"),
        "transfer_to_human_agents": transfer_conditions("customer"),
        "log_shift_event": conditions("the goal shift is recorded",
                                      pre="the customer changed what they want (AgentChangeBench's tool set)"),
    },
)

"""The banking tools' dependency graph (enforced only in dependency-graph mode; docs/servers.md renders it).

Authentication is not required before account actions: in 49 of the 150 committed generated tasks
(snapshots/banking/v1/tasks.json) the gold calls act on an account, card or request the customer names
before any customer lookup, or with none, so the oracle could not solve them; only the payment workflow
and the parked-task pair are declared.
"""

from shiftbox_servers.kit import dependency_graph

DEPENDENCIES = dependency_graph({
    "authorize_payment_request": [("create_payment_request", "check_payment_request")],
    "resume_task": ["park_task"],
})

"""The airline tools' dependency graph (enforced only in dependency-graph mode; docs/servers.md renders it).

A certificate is sent only after the reservation and the flight's status were looked up. Reservation
changes do not require a lookup first: in the committed generated tasks (snapshots/airline/v1/tasks.json)
a user who names a reservation id is often served straight away (7 to 11 of each change tool's 33-48
gold calls come with no reservation lookup before them).
"""

from shiftbox_servers.kit import dependency_graph

DEPENDENCIES = dependency_graph({
    "send_certificate": ["get_reservation_details", "get_flight_status"],
})

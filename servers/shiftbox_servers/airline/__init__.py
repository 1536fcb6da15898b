"""The airline domain: 14 tools over flights, users, reservations and payments (tau2's airline contract); tool
sets `tau2` (tau2-bench's airline tools as tau2 serves them) and `agentchangebench` (its fork's)."""

from pathlib import Path

from shiftbox_servers.kit import DeferredToolSets, Domain, deferred

from ._anchors import SEARCH_RULES
from ._graph import DEPENDENCIES
from ._missions import MISSIONS
from ._schema import CLOCK_START, SCHEMA, SCHEMA_VERSION, SNAPSHOT_VERSION, new_database
from ._tools import tools

GOAL_TOOLS: dict[str, tuple[str, ...]] = {
    "reservation_lookup": ("get_user_details", "get_reservation_details"),
    "booking": ("search_direct_flight", "search_onestop_flight", "list_all_airports", "book_reservation"),
    "cancellation": ("get_reservation_details", "cancel_reservation"),
    "modification": ("get_reservation_details", "search_direct_flight", "search_onestop_flight",
                     "update_reservation_flights"),
    "baggage": ("get_reservation_details", "update_reservation_baggages"),
    "passenger_update": ("get_reservation_details", "update_reservation_passengers"),
    "flight_status": ("get_flight_status",),
    "compensation": ("get_reservation_details", "get_flight_status", "send_certificate"),
}
"""Goal label -> the tools relevant to it (read by the task generator, validator and GSRT)."""

GOAL_REQUESTS: dict[str, tuple[str, ...]] = {
    "reservation_lookup": (
        "Could you pull up my reservation {reservation_id} and tell me what's on it?",
        "I'd like to check the details of my upcoming reservations.",
        "Can you look up my booking and go over the flights and passengers with me?",
    ),
    "booking": (
        "I'd like to book a new flight.",
        "Can you help me book a trip? I need a flight for an upcoming visit.",
        "I want to make a new reservation, please.",
    ),
    "cancellation": (
        "I need to cancel my reservation {reservation_id}.",
        "I'd like to cancel one of my upcoming trips and get my money back.",
        "Please cancel my booking; I can't make the trip anymore.",
    ),
    "modification": (
        "I need to change the flights on my reservation {reservation_id}.",
        "Can I move my trip to a different date or upgrade the cabin?",
        "I'd like to modify my upcoming reservation.",
    ),
    "baggage": (
        "I want to add checked bags to my reservation {reservation_id}.",
        "How many bags can I check, and can you add a couple more?",
        "I need to add some luggage to my upcoming trip.",
    ),
    "passenger_update": (
        "I need to change a passenger's name on reservation {reservation_id}.",
        "One of the travelers on my booking has changed; can you update the passenger details?",
        "There's a mistake in a passenger's details on my reservation.",
    ),
    "flight_status": (
        "Can you tell me whether my flight is on time?",
        "What's the current status of my flight today?",
        "I'd like to check if my flight has been delayed or cancelled.",
    ),
    "compensation": (
        "My flight was delayed and I'd like some compensation for it.",
        "My flight got cancelled; what can you do for me?",
        "I'm unhappy about a disrupted flight and want to be compensated.",
    ),
}
"""Goal label -> how a customer asks for it (scripted users pick one per goal by seed)."""

GOAL_LEXICON: dict[str, tuple[str, ...]] = {
    "reservation_lookup": ("itinerary", "reservation details", "booking details"),
    "booking": ("book a", "book you", "book the", "new flight", "new reservation", "search", "fare"),
    "cancellation": ("cancel", "refund"),
    "modification": ("modif", "upgrade", "reschedul", "move your", "cabin", "different flight"),
    "baggage": ("bag", "luggage", "suitcase"),
    "passenger_update": ("passenger", "traveler", "name on"),
    "flight_status": ("status", "on time", "delayed", "departure"),
    "compensation": ("compensat", "certificate", "voucher", "gesture"),
}
"""Goal label -> words that show the agent took the goal up (GSRT's deterministic ack detector)."""
GENERIC_TERMS = ("flight", "reservation", "booking", "trip", "ticket", "change", "details", "look up", "help")


build_native = deferred(f"{__name__}._builder", "build_native")
import_agentchangebench = deferred(f"{__name__}._import_acb", "import_agentchangebench")

_TOOLSETS = DeferredToolSets({"tau2": (f"{__name__}._tau2", "tau2_tools"),
                              "agentchangebench": (f"{__name__}._tau2", "acb_tools")})
"""The tool sets beside the default, each loaded when asked for."""
__getattr__, __dir__ = _TOOLSETS.exports(__name__)

DOMAIN = Domain(
    name="airline",
    tools=tools,
    policy=(Path(__file__).with_name("policy.md")).read_text(),
    goal_tools=GOAL_TOOLS,
    goal_lexicon=GOAL_LEXICON,
    generic_terms=GENERIC_TERMS,
    goal_requests=GOAL_REQUESTS,
    snapshot_version=SNAPSHOT_VERSION,
    build_snapshot=build_native,
    importers={"agentchangebench": import_agentchangebench},
    missions=MISSIONS,
    dependency_graph=DEPENDENCIES,
    toolsets=_TOOLSETS,
)

__all__ = [
    "CLOCK_START", "DEPENDENCIES", "DOMAIN", "GOAL_LEXICON", "GOAL_REQUESTS", "GOAL_TOOLS", "MISSIONS", "SCHEMA", "SCHEMA_VERSION",
    "SEARCH_RULES", "SNAPSHOT_VERSION", "acb_tools", "build_native", "import_agentchangebench", "new_database",
    "tau2_tools", "tools",
]

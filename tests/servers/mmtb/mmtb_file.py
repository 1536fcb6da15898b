"""A small file in Multi-Mission Tool Bench's JSONL format, written for these tests (not MMTB's data): two records
whose missions cover every type code (单 single, 多 serial / parallel / serial+parallel, 反 clarify, 拒 chat)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Today's weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "city name"}},
                   "required": ["city"]}}}
FLIGHTS = {"type": "function", "function": {
    "name": "search_flights", "description": "Flights between two cities on a date.",
    "parameters": {"type": "object", "properties": {
        "origin": {"type": "string", "description": "from"}, "destination": {"type": "string", "description": "to"},
        "date": {"type": "string", "description": "YYYY-MM-DD"}}, "required": ["origin", "destination"]}}}
BOOK = {"type": "function", "function": {
    "name": "book_flight", "description": "Book a flight by its number.",
    "parameters": {"type": "object", "properties": {
        "flight_no": {"type": "string", "description": "flight number"},
        "seats": {"type": "integer", "description": "how many seats"}}, "required": ["flight_no", "seats"]}}}
NO_PARAMETERS = {"type": "function", "function": {
    "name": "get_holidays", "description": "Public holidays this month.",
    "parameters": {"type": "object", "properties": {"": {}}}}}


def step(idx: int, name: str, arguments: dict[str, Any], observation: Any, after: tuple[int, ...] = (),
         **extra: Any) -> dict[str, Any]:
    return {"idx": idx, "action": {"name": name, "arguments": arguments}, "observation": observation,
            "dependency_list": list(after), **extra}


def answer(idx: int, text: str, after: tuple[int, ...] = ()) -> dict[str, Any]:
    return step(idx, "prepare_to_answer", {"answer_type": "tool"}, text, after)


TRIP = {  # single, parallel, clarify, serial
    "id": "rec_trip", "type": ["单", "多", "反", "多"], "env_info": "2025-06-02 09:00:00",
    "english_tools": [WEATHER, FLIGHTS, BOOK],
    "english_task": ["What's the weather in Lisbon?", "And in Porto and Faro?",
                     "Find me a flight from Lisbon to Porto.", "Book the cheapest one for two people."],
    "english_answer_list": [
        [step(0, "get_weather", {"city": "Lisbon"}, {"city": "Lisbon", "sky": "sunny", "high_c": 27}),
         answer(1, "Sunny in Lisbon, 27 degrees.", (0,))],
        [step(0, "get_weather", {"city": "Porto"}, {"city": "Porto", "sky": "cloudy", "high_c": 21}),
         step(1, "get_weather", {"city": "Faro"}, {"city": "Faro", "sky": "sunny", "high_c": 30}),
         answer(2, "Porto is cloudy (21), Faro sunny (30).", (0, 1))],
        [step(0, "ask_user_for_required_parameters", {}, "On which date?", user_input="On 2025-06-10."),
         step(1, "search_flights", {"origin": "Lisbon", "destination": "Porto", "date": "2025-06-10"},
              [{"flight_no": "TP1940", "price_eur": 89}, {"flight_no": "FR8311", "price_eur": 41}], (0,)),
         answer(2, "Two flights: TP1940 (89 EUR) and FR8311 (41 EUR).", (1,))],
        [step(0, "search_flights", {"origin": "Lisbon", "destination": "Porto", "date": "2025-06-10"},
              [{"flight_no": "TP1940", "price_eur": 89}, {"flight_no": "FR8311", "price_eur": 41}]),
         step(1, "book_flight", {"flight_no": "FR8311", "seats": 2}, {"booking": "BK-5521", "total_eur": 82}, (0,)),
         answer(2, "Booked FR8311 for two: BK-5521, 82 EUR.", (1,))],
    ],
}
HOLIDAY = {  # serial+parallel, chat
    "id": ["rec_", "holiday"], "type": ["多", "拒"], "env_info": ["2025-04-01 08:00:00", "2025-04-01 08:05:00"],
    "english_tools": [NO_PARAMETERS, WEATHER],
    "english_task": ["Which holidays are there this month, and what's the weather in Madrid and Rome?",
                     "Thanks, that's lovely."],
    "english_answer_list": [
        [step(0, "get_holidays", {}, "Good Friday (18th), Easter Monday (21st)"),
         step(1, "get_weather", {"city": "Madrid"}, {"city": "Madrid", "sky": "rain", "high_c": 16}),
         step(2, "get_weather", {"city": "Rome"}, {"city": "Rome", "sky": "sunny", "high_c": 19}, (0,)),
         answer(3, "Good Friday and Easter Monday; Madrid rainy, Rome sunny.", (1, 2))],
        [answer(0, "You're welcome!")],
    ],
}
RECORDS = [TRIP, HOLIDAY]


def write_mmtb_file(path: Path, records: list[dict[str, Any]] = RECORDS) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path

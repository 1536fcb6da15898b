"""The native snapshot: reproducible to the byte, at tau2's scale, and AgentChangeBench's airline tasks
(tau2's airline tasks) run on it — every gold call succeeds and the facts the tasks state hold."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from shiftbox_servers.airline import DOMAIN
from shiftbox_servers.kit import (
    EPISODE_META_KEY,
    DomainServer,
    Snapshot,
    result_error,
)
from tests.conftest import require_acb
from tests.servers.helpers import ok

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def native() -> Snapshot:
    return Snapshot.load(DOMAIN.default_snapshot_dir())


def test_native_snapshot_has_tau2_scale_and_every_status(native):
    counts = native.manifest.row_counts
    assert counts["flights"] == 300 and counts["flight_dates"] == 300 * 30
    assert counts["users"] == 500 and counts["reservations"] == 2000 and counts["airports"] == 20
    db = native.open_copy()
    values = lambda sql: {r[0] for r in db.execute(sql)}  # noqa: E731
    assert values("SELECT status FROM flight_dates") == {"available", "on time", "delayed", "flying", "landed",
                                                         "cancelled"}
    assert values("SELECT membership FROM users") == {"regular", "silver", "gold"}
    assert values("SELECT source FROM payment_methods") == {"credit_card", "gift_card", "certificate"}
    assert values("SELECT cabin FROM reservations") == {"basic_economy", "economy", "business"}
    assert values("SELECT status FROM reservations") == {"active", "cancelled"}
    assert values("SELECT flight_type FROM reservations") == {"one_way", "round_trip"}
    # every reservation's payments add up to its fares, insurance and bags; cancelled ones net to zero
    rows = db.execute(
        "SELECT r.reservation_id, r.status, r.insurance, r.nonfree_baggages, "
        "(SELECT COUNT(*) FROM reservation_passengers p WHERE p.reservation_id = r.reservation_id), "
        "(SELECT SUM(price) FROM reservation_flights f WHERE f.reservation_id = r.reservation_id), "
        "(SELECT SUM(amount) FROM payments m WHERE m.reservation_id = r.reservation_id) FROM reservations r")
    for rid, status, insurance, nonfree, pax, fares, paid in rows:
        expected = 0 if status == "cancelled" else fares * pax + (30 * pax if insurance == "yes" else 0) + 50 * nonfree
        assert round(paid, 2) == round(expected, 2), rid
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    # ids have tau2's shapes
    assert all(len(r) == 6 and r.isalnum() and r == r.upper() for r in values("SELECT reservation_id FROM reservations"))
    assert values("SELECT substr(flight_number, 1, 3) FROM flights") == {"HAT"}


async def test_acb_airline_gold_calls_all_succeed_on_the_native_snapshot(native):
    tasks = json.loads(require_acb("airline", "tasks.json").read_text())
    failures, calls = [], 0
    async with Client(DomainServer(DOMAIN, native).mcp) as client:
        for task in tasks:
            for action in task["evaluation_criteria"].get("actions") or []:
                calls += 1
                result = await client.call_tool(action["name"], action["arguments"],
                                                meta={EPISODE_META_KEY: f"acb-{task['id']}"})
                if result.is_error:
                    failures.append((task["id"], action["name"], result_error(result)["message"]))
    assert calls == 148 and failures == []


async def _run(client, episode: str, calls: list[tuple[str, dict]]) -> list[dict]:
    return [await ok(client, name, args, episode=episode) for name, args in calls]


def _flights(*legs: tuple[str, str]) -> list[dict]:
    return [{"flight_number": n, "date": d} for n, d in legs]


async def test_the_facts_the_tasks_state_hold(native):
    async with Client(DomainServer(DOMAIN, native).mcp) as client:
        # task 11: downgrading GV1N64 to basic economy refunds $5244
        (r,) = await _run(client, "t11", [("update_reservation_flights", {
            "reservation_id": "GV1N64", "cabin": "basic_economy", "payment_id": "gift_card_1642017",
            "flights": _flights(("HAT003", "2024-05-19"), ("HAT290", "2024-05-20"))})])
        assert r["payment_history"][-1] == {"payment_id": "gift_card_1642017", "amount": -5244.0}
        # task 18: Omar Davis saves $23553 downgrading his five business reservations
        downgrades = [("JG7FMM", "credit_card_2929732", [("HAT028", "2024-05-21"), ("HAT277", "2024-05-21")]),
                      ("2FBBAH", "gift_card_3481935", [("HAT080", "2024-05-28"), ("HAT076", "2024-05-28"),
                                                       ("HAT255", "2024-05-30"), ("HAT148", "2024-05-30")]),
                      ("X7BYG1", "credit_card_2929732", [("HAT232", "2024-05-24"), ("HAT228", "2024-05-24")]),
                      ("EQ1G6C", "gift_card_6847880", [("HAT084", "2024-05-23"), ("HAT175", "2024-05-23")]),
                      ("BOH180", "credit_card_9525117", [("HAT276", "2024-05-21"), ("HAT279", "2024-05-22")])]
        results = await _run(client, "t18", [("update_reservation_flights", {
            "reservation_id": rid, "cabin": "economy", "payment_id": pay, "flights": _flights(*legs)})
            for rid, pay, legs in downgrades])
        assert sum(r["payment_history"][-1]["amount"] for r in results) == -23553.0
        # task 44: upgrading Sophia Silva's three short reservations costs $1385 (between 1380 and 1390)
        upgrades = [("NM1VX1", [("HAT300", "2024-05-25"), ("HAT208", "2024-05-27")]),
                    ("H8Q05L", [("HAT268", "2024-05-24")]),
                    ("KC18K6", [("HAT300", "2024-05-21"), ("HAT215", "2024-05-21")])]
        results = await _run(client, "t44", [("update_reservation_flights", {
            "reservation_id": rid, "cabin": "business", "payment_id": "credit_card_4196779",
            "flights": _flights(*legs)}) for rid, legs in upgrades])
        assert sum(r["payment_history"][-1]["amount"] for r in results) == 1385.0
        # tasks 14/23: Mohamed Silva's gift cards hold $327, his certificates $1000
        user = await ok(client, "get_user_details", {"user_id": "mohamed_silva_9265"})
        by_source = lambda s: sum(m["amount"] for m in user["payment_methods"].values() if m["source"] == s)  # noqa: E731
        assert (by_source("gift_card"), by_source("certificate")) == (327.0, 1000.0)
        # task 7: Daiki Muller's other upcoming reservation costs $1628
        other = await ok(client, "get_reservation_details", {"reservation_id": "7ZR4QD"})
        assert sum(p["amount"] for p in other["payment_history"]) == 1628.0
        # task 3: a silver member with two economy passengers may check 2 x 2 = 4 bags
        jmo = await ok(client, "get_reservation_details", {"reservation_id": "JMO1MG"})
        anya = await ok(client, "get_user_details", {"user_id": "anya_garcia_5901"})
        assert (anya["membership"], jmo["cabin"], len(jmo["passengers"])) == ("silver", "economy", 2)
        # tasks 2/27: the delayed flights
        for flight in ("HAT039", "HAT190", "HAT045"):
            s = await ok(client, "get_flight_status", {"flight_number": flight, "date": "2024-05-15"})
            assert s["status"] == "delayed"
        # task 9: no nonstop JFK -> MCO
        direct = await ok(client, "search_direct_flight", {"origin": "JFK", "destination": "MCO", "date": "2024-05-22"})
        assert direct["flights"] == []


async def test_the_tasks_choices_lead_to_their_gold_itineraries(native):
    """Searching as each task's user would, the gold itinerary is the unique cheapest (or fastest) one."""
    from datetime import datetime, timedelta

    from shiftbox_servers.airline import SEARCH_RULES

    def at(day: str, clock: str) -> datetime:  # 'HH:MM[:SS][+1]' on a day ('24:00' is the next midnight)
        extra = timedelta(days=1) if clock.endswith("+1") else timedelta()
        return datetime.fromisoformat(day) + timedelta(hours=int(clock[:2]), minutes=int(clock[3:5])) + extra

    async with Client(DomainServer(DOMAIN, native).mcp) as client:
        for rule in SEARCH_RULES:
            offered = []
            for origin in rule.origins:
                for destination in rule.destinations:
                    where = {"origin": origin, "destination": destination, "date": rule.date}
                    offered += [[f] for f in (await ok(client, "search_direct_flight", where))["flights"]]
                    if not rule.direct_only:
                        offered += (await ok(client, "search_onestop_flight", where))["itineraries"]
            day = rule.date
            kept = [it for it in offered
                    if at(day, rule.depart_after) <= at(it[0]["date"], it[0]["scheduled_departure_time_est"])
                    <= at(day, rule.depart_before)
                    and (rule.arrive_before is None
                         or at(it[-1]["date"], it[-1]["scheduled_arrival_time_est"]) <= at(day, rule.arrive_before))]

            def score(it, rule=rule):
                if rule.best == "cheapest":
                    return sum(f["prices"][rule.cabin] for f in it)
                return at(it[-1]["date"], it[-1]["scheduled_arrival_time_est"]) - at(
                    it[0]["date"], it[0]["scheduled_departure_time_est"])

            best = min(kept, key=score)
            assert tuple(f["flight_number"] for f in best) == rule.gold, f"task {rule.task}"
            assert sum(score(it) == score(best) for it in kept) == 1, f"task {rule.task}: a tie"


async def test_handwritten_tasks_gold_calls_run_on_the_native_snapshot(native):
    """snapshots/airline/v1/tasks-handwritten.json names ids of this snapshot; each task's gold path succeeds."""
    tasks = json.loads((DOMAIN.default_snapshot_dir() / "tasks-handwritten.json").read_text())
    assert tasks["snapshot"] == "airline/v1" and 3 <= len(tasks["tasks"]) <= 5
    async with Client(DomainServer(DOMAIN, native).mcp) as client:
        for task in tasks["tasks"]:
            goals = task["user_scenario"]["goal_shifts"]["goals"]
            assert 2 <= len(goals) <= 3 and set(goals) <= set(DOMAIN.goal_tools)
            for action in task["evaluation_criteria"]["action_sets"]:
                assert action["goal"] in goals
                gold = action["allowed_tools"][0]
                await ok(client, gold["function_name"], gold["params"], episode=task["id"])

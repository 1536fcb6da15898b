"""The native snapshot rebuilds to its committed hash and holds what tasks need; episodes are isolated and
deterministic; the tau2 / AgentChangeBench import keeps ids and answers like db.json."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, Snapshot
from shiftbox_servers.retail import DOMAIN, check_payments_balance, import_agentchangebench
from tests.conftest import require_acb
from tests.servers.helpers import call, digest, fails, ok

STATUSES = {"pending", "processed", "delivered", "cancelled", "pending (item modified)", "exchange requested",
            "return requested"}


# -- native snapshot -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def native_db():
    return Snapshot.load(DOMAIN.default_snapshot_dir()).open_copy()


def _rows(db, sql):
    cur = db.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]


def test_native_snapshot_is_at_tau2_scale(native_db):
    count = lambda sql: native_db.execute(sql).fetchone()[0]  # noqa: E731
    assert count("SELECT COUNT(*) FROM products") == 50
    assert 550 <= count("SELECT COUNT(*) FROM variants") <= 650
    assert count("SELECT COUNT(*) FROM users") == 500
    assert count("SELECT COUNT(*) FROM orders") == 1000
    statuses = Counter(r[0] for r in native_db.execute("SELECT status FROM orders"))
    assert set(statuses) == STATUSES and min(statuses.values()) >= 50
    sources = Counter(r[0] for r in native_db.execute("SELECT source FROM payment_methods"))
    assert set(sources) == {"credit_card", "gift_card", "paypal"} and min(sources.values()) >= 150
    assert count("SELECT COUNT(*) FROM users WHERE user_id NOT IN (SELECT user_id FROM payment_methods)") == 0


def test_native_snapshot_has_the_scenarios_tasks_need(native_db):
    count = lambda sql: native_db.execute(sql).fetchone()[0]  # noqa: E731
    assert count("SELECT COUNT(*) FROM variants WHERE available = 0") > 100
    # every product has at least two available variants, so any item can be exchanged or modified
    assert count("SELECT COUNT(*) FROM products WHERE product_id NOT IN (SELECT product_id FROM variants "
                 "WHERE available = 1 GROUP BY product_id HAVING COUNT(*) >= 2)") == 0
    assert count("SELECT COUNT(*) FROM orders o JOIN order_payments p USING (order_id) JOIN payment_methods m "
                 "USING (payment_method_id) WHERE o.status = 'pending' AND m.source = 'gift_card'") > 20
    assert count("SELECT COUNT(*) FROM (SELECT order_id FROM fulfillments GROUP BY order_id HAVING COUNT(*) > 1)") > 10
    assert count("SELECT COUNT(*) FROM orders WHERE cancel_reason IS NOT NULL") == count(
        "SELECT COUNT(*) FROM orders WHERE status = 'cancelled'")
    assert count("SELECT COUNT(*) FROM orders WHERE (exchange_payment_method_id IS NOT NULL) != "
                 "(status = 'exchange requested')") == 0
    assert count("SELECT COUNT(*) FROM orders WHERE (return_payment_method_id IS NOT NULL) != "
                 "(status = 'return requested')") == 0
    # shipped orders have fulfillments, unshipped ones none
    assert count("SELECT COUNT(*) FROM orders WHERE status IN ('pending', 'pending (item modified)', 'cancelled') "
                 "AND order_id IN (SELECT order_id FROM fulfillments)") == 0
    assert count("SELECT COUNT(*) FROM orders WHERE status IN ('processed', 'delivered', 'exchange requested', "
                 "'return requested') AND order_id NOT IN (SELECT order_id FROM fulfillments)") == 0


def test_native_snapshot_invariants(native_db):
    rows = {t: _rows(native_db, f"SELECT * FROM {t}") for t in ("orders", "order_items", "order_payments")}
    check_payments_balance(rows)  # every order's payments net to its items (cancelled: to zero)
    product_ids = {r[0] for r in native_db.execute("SELECT product_id FROM products")}
    item_ids = {r[0] for r in native_db.execute("SELECT item_id FROM variants")}
    assert not product_ids & item_ids and all(i.isdigit() and len(i) == 10 for i in product_ids | item_ids)
    keys = native_db.execute("SELECT first_name, last_name, zip FROM users").fetchall()
    assert len(set(keys)) == len(keys)  # name + zip identifies a user
    assert all(r[0].startswith("#W") and len(r[0]) == 9 for r in native_db.execute("SELECT order_id FROM orders"))
    # exchanged items change to an available variant of the same product
    assert native_db.execute(
        "SELECT COUNT(*) FROM order_items i JOIN variants a ON a.item_id = i.item_id JOIN variants b "
        "ON b.item_id = i.exchange_item_id WHERE a.product_id != b.product_id OR b.available = 0").fetchone()[0] == 0


@pytest.mark.anyio
async def test_native_server_answers_and_its_gift_card_arithmetic_holds():
    snapshot = Snapshot.load(DOMAIN.default_snapshot_dir())
    db = snapshot.open_copy()
    order_id, pm_id, amount, balance = db.execute(
        "SELECT o.order_id, m.payment_method_id, p.amount, m.balance FROM orders o JOIN order_payments p USING "
        "(order_id) JOIN payment_methods m USING (payment_method_id) WHERE o.status = 'pending' AND "
        "m.source = 'gift_card' ORDER BY o.order_id LIMIT 1").fetchone()
    user_id = db.execute("SELECT user_id FROM orders WHERE order_id = ?", (order_id,)).fetchone()[0]
    async with Client(DomainServer(DOMAIN, snapshot).mcp) as client:
        o = await ok(client, "cancel_pending_order", {"order_id": order_id, "reason": "no longer needed"})
        assert o["payment_history"][-1] == {"transaction_type": "refund", "amount": amount,
                                            "payment_method_id": pm_id}
        u = await ok(client, "get_user_details", {"user_id": user_id})
        assert u["payment_methods"][pm_id]["balance"] == round(balance + amount, 2)
        assert order_id in u["orders"]


# -- episodes: isolation and determinism ---------------------------------------------------------


@pytest.mark.anyio
async def test_episodes_are_isolated(shop):
    await ok(shop, "cancel_pending_order", {"order_id": "#W1000002", "reason": "no longer needed"}, episode="a")
    seen_in_b = await ok(shop, "get_order_details", {"order_id": "#W1000002"}, episode="b")
    assert seen_in_b["status"] == "pending"
    balance_b = (await ok(shop, "get_user_details", {"user_id": "ana_lopez_1001"}, episode="b"))["payment_methods"]
    assert balance_b["gift_card_1000002"]["balance"] == 50.0
    assert (await ok(shop, "get_order_details", {"order_id": "#W1000002"}, episode="a"))["status"] == "cancelled"
    # b can still do what a already did
    await ok(shop, "cancel_pending_order", {"order_id": "#W1000002", "reason": "no longer needed"}, episode="b")
    await fails(shop, "cancel_pending_order", {"order_id": "#W1000002", "reason": "no longer needed"}, "precondition_failed",
                episode="a")


@pytest.mark.anyio
async def test_same_calls_in_same_order_give_identical_results_and_digests(shop):
    sequence = [
        ("modify_pending_order_payment", {"order_id": "#W1000006", "payment_method_id": "gift_card_1000002"}),
        ("modify_pending_order_items", {"order_id": "#W1000002", "item_ids": ["2000000001"],
                                        "new_item_ids": ["2000000002"], "payment_method_id": "gift_card_1000002"}),
        ("transfer_to_human_agents", {"summary": "asks for a discount"}),
        ("exchange_delivered_order_items", {"order_id": "#W1000003", "item_ids": ["3000000002"],
                                            "new_item_ids": ["3000000001"], "payment_method_id": "paypal_1000003"}),
    ]
    runs = []
    for episode in ("r1", "r2"):
        results = [(await call(shop, tool, args, episode)).model_dump_json() for tool, args in sequence]
        runs.append((results, await digest(shop, episode)))
    assert runs[0] == runs[1]
    assert runs[0][1] != await digest(shop, "untouched")


# -- the AgentChangeBench / tau2 import ----------------------------------------------------------


@pytest.fixture(scope="module")
def acb_source() -> dict:
    return json.loads(require_acb("retail", "db.json").read_text())


@pytest.fixture(scope="module")
def acb_snapshot(tmp_path_factory) -> Snapshot:
    directory = tmp_path_factory.mktemp("retail-acb")
    import_agentchangebench(require_acb("retail", "db.json"), directory)
    return Snapshot.load(directory)


def test_import_keeps_ids_and_counts(acb_snapshot, acb_source):
    m = acb_snapshot.manifest
    assert (m.domain, m.snapshot_version, m.source) == ("retail", "acb-v1", "agentchangebench retail db.json")
    assert m.row_counts["products"] == len(acb_source["products"]) == 50
    assert m.row_counts["variants"] == sum(len(p["variants"]) for p in acb_source["products"].values()) == 591
    assert m.row_counts["users"] == 500 and m.row_counts["orders"] == 1000
    assert m.row_counts["payment_methods"] == 695
    assert m.row_counts["order_items"] == sum(len(o["items"]) for o in acb_source["orders"].values())
    assert m.row_counts["order_payments"] == sum(len(o["payment_history"]) for o in acb_source["orders"].values())


@pytest.mark.anyio
async def test_imported_order_matches_db_json(acb_snapshot, acb_source):
    expected = acb_source["orders"]["#W2378156"]
    async with Client(DomainServer(DOMAIN, acb_snapshot).mcp) as client:
        o = await ok(client, "get_order_details", {"order_id": "#W2378156"})
    assert o["status"] == expected["status"] == "delivered"
    assert o["items"] == expected["items"]  # name, product id, item id, price and options, in order
    assert [i["price"] for i in o["items"]] == [342.81, 561.05, 272.33, 262.47, 381.26]
    assert o["payment_history"] == expected["payment_history"]
    assert o["fulfillments"] == expected["fulfillments"]
    assert o["address"] == expected["address"] and o["user_id"] == expected["user_id"]
    assert round(sum(i["price"] for i in o["items"]), 2) == expected["payment_history"][0]["amount"] == 1819.92


@pytest.mark.anyio
async def test_imported_snapshot_runs_a_reference_task(acb_snapshot, acb_source):
    """tau2 retail task 0: authenticate by name + zip, then exchange the keyboard and thermostat."""
    user = acb_source["users"]["yusuf_rossi_9620"]
    products = acb_source["products"]
    price = {i: v["price"] for p in products.values() for i, v in p["variants"].items()}
    async with Client(DomainServer(DOMAIN, acb_snapshot).mcp) as client:
        found = await ok(client, "find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi",
                                                               "zip": "19122"})
        assert found == {"user_ids": ["yusuf_rossi_9620"]}
        u = await ok(client, "get_user_details", {"user_id": "yusuf_rossi_9620"})
        assert u["payment_methods"] == user["payment_methods"] and u["orders"] == sorted(user["orders"])
        p = await ok(client, "get_product_details", {"product_id": "1656367028"})
        assert p["variants"] == products["1656367028"]["variants"]
        listed = await ok(client, "list_all_product_types")
        assert listed["product_types"] == {p["name"]: pid for pid, p in products.items()}
        o = await ok(client, "exchange_delivered_order_items", {
            "order_id": "#W2378156", "item_ids": ["1151293680", "4983901480"],
            "new_item_ids": ["7706410293", "7747408585"], "payment_method_id": "credit_card_9513926"})
    difference = round(price["7706410293"] + price["7747408585"] - price["1151293680"] - price["4983901480"], 2)
    assert o["status"] == "exchange requested" and o["exchange_price_difference"] == difference
    assert o["exchange_items"] == ["1151293680", "4983901480"]
    assert o["exchange_new_items"] == ["7706410293", "7747408585"]


def test_importer_names_the_bad_record(tmp_path, acb_source):
    broken = json.loads(json.dumps(acb_source))
    broken["orders"]["#W2378156"]["status"] = "lost in the mail"
    source = tmp_path / "db.json"
    source.write_text(json.dumps(broken))
    with pytest.raises(ValueError) as info:
        import_agentchangebench(source, tmp_path / "out")
    message = str(info.value)
    assert "orders" in message and "#W2378156" in message and "status" in message

    broken = json.loads(json.dumps(acb_source))
    broken["orders"]["#W2378156"]["payment_history"][0]["payment_method_id"] = "paypal_5727330"  # noah_brown's
    source.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"#W2378156.*payment_method_id.*does not belong to user yusuf_rossi_9620"):
        import_agentchangebench(source, tmp_path / "out")


@pytest.mark.anyio
async def test_handwritten_tasks_gold_calls_run_on_the_native_snapshot():
    """snapshots/retail/v1/tasks-handwritten.json names ids of this snapshot; each task's gold path succeeds."""
    tasks = json.loads((DOMAIN.default_snapshot_dir() / "tasks-handwritten.json").read_text())
    assert tasks["snapshot"] == "retail/v1" and 3 <= len(tasks["tasks"]) <= 5
    async with Client(DomainServer(DOMAIN, Snapshot.load(DOMAIN.default_snapshot_dir())).mcp) as client:
        for task in tasks["tasks"]:
            goals = task["user_scenario"]["goal_shifts"]["goals"]
            assert 2 <= len(goals) <= 3 and set(goals) <= set(DOMAIN.goal_tools)
            for action in task["evaluation_criteria"]["action_sets"]:
                gold = action["allowed_tools"][0]
                await ok(client, gold["function_name"], gold["params"], episode=task["id"])

"""The native snapshot rebuilds to its committed hash; the AgentChangeBench import keeps ids and works."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.banking import DOMAIN, import_agentchangebench, normalize_phone
from shiftbox_servers.kit import DomainServer, Snapshot
from tests.conftest import require_acb
from tests.servers.helpers import fails, ok


def test_native_snapshot_has_the_scenarios_tasks_need():
    db = Snapshot.load(DOMAIN.default_snapshot_dir()).open_copy()
    count = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    assert count("SELECT COUNT(*) FROM customers") >= 200
    assert count("SELECT COUNT(*) FROM transactions") >= 2000
    assert count("SELECT COUNT(*) FROM cards WHERE status = 'Locked'") > 0
    assert count("SELECT COUNT(*) FROM transactions WHERE reference = 'SUSPICIOUS_CHARGE'") > 0
    assert count("SELECT COUNT(*) FROM statements WHERE status = 'Overdue'") > 0
    assert count("SELECT COUNT(*) FROM payment_requests WHERE status = 'Awaiting Payment'") > 0
    assert count("SELECT COUNT(*) FROM accounts WHERE is_business = 1") > 0
    # the invariant create_payment_request relies on
    assert count("SELECT MAX(n) FROM (SELECT COUNT(*) n FROM payment_requests "
                 "WHERE status = 'Awaiting Payment' GROUP BY customer_id)") == 1
    # every phone number is stored in E.164
    phones = [r[0] for r in db.execute("SELECT phone_number FROM customers")]
    assert all(normalize_phone(p) == p for p in phones)
    assert len(set(phones)) == len(phones)


@pytest.mark.parametrize(("raw", "e164"), [
    ("555-123-4567", "+15551234567"), ("+1 (555) 123-4567", "+15551234567"), ("+15551234567", "+15551234567"),
    ("(555) 123 4567", "+15551234567"), ("1-555-123-4567", "+15551234567"), ("555.123.4567", "+15551234567"),
    ("555-1234", None), ("+44 20 7946 0958", None), ("2-555-123-4567", None), ("555-123-4567 ext 2", None),
    ("phone", None), ("", None),
])
def test_normalize_phone(raw, e164):
    assert normalize_phone(raw) == e164


@pytest.fixture(scope="module")
def acb_snapshot(tmp_path_factory) -> Snapshot:
    source = require_acb("banking", "db.toml")
    directory = tmp_path_factory.mktemp("acb")
    import_agentchangebench(source, directory)
    return Snapshot.load(directory)


def test_import_keeps_reference_ids_and_counts(acb_snapshot):
    m = acb_snapshot.manifest
    assert (m.domain, m.snapshot_version) == ("banking", "acb-v1")
    assert m.row_counts["customers"] == 6 and m.row_counts["accounts"] == 7 and m.row_counts["cards"] == 6
    db = acb_snapshot.open_copy()
    assert db.execute("SELECT full_name FROM customers WHERE customer_id = 'cust_303'").fetchone() == ("Taylor Johnson",)
    assert db.execute("SELECT customer_id, is_business FROM accounts WHERE account_id = 'acc_biz_401'").fetchone() == ("cust_401", 1)


@pytest.mark.anyio
async def test_imported_snapshot_answers_the_reference_tasks_lookups(acb_snapshot):
    async with Client(DomainServer(DOMAIN, acb_snapshot).mcp) as client:
        # db.toml stores cust_001's phone as "555-123-7890"; the reference required that exact string
        c = await ok(client, "get_customer_by_phone", {"phone_number": "+1 (555) 123-7890"})
        assert c["customer_id"] == "cust_001" and c["account_ids"] == ["acc_001"]
        c = await ok(client, "get_customer_by_phone", {"phone_number": "+15551234567"})
        assert c["customer_id"] == "cust_101"
        d = await ok(client, "file_dispute", {"account_id": "acc_001", "tx_id": "tx_101", "reason_code": "unauthorized"})
        assert d["status"] == "Submitted"
        # tx_001 already has the reference's draft dispute disp_001
        await fails(client, "file_dispute", {"account_id": "acc_001", "tx_id": "tx_001", "reason_code": "unauthorized"},
                    "conflict")
        assert (await ok(client, "get_dispute", {"dispute_id": "disp_001"}))["status"] == "Draft"


def test_importer_names_the_bad_row(tmp_path):
    source = require_acb("banking", "db.toml")
    broken = tmp_path / "db.toml"
    broken.write_text(source.read_text().replace('status = "Locked"', 'status = "Melted"'))
    with pytest.raises(ValueError) as info:
        import_agentchangebench(broken, tmp_path / "out")
    message = str(info.value)
    assert "cards" in message and "card_303" in message and "status" in message

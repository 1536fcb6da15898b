"""`shiftbox conformance replay`: every agent tool call of a recorded AgentChangeBench/tau2 run replayed on
shiftbox's server (one fresh episode per simulation) and classified against the tool message the reference
returned; deliberate differences come from the one table in docs/servers.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.conformance import (
    CLASSES,
    UNEXPLAINED_CLASSES,
    compare_outcomes,
    load_deliberate_differences,
)
from shiftbox_servers.banking import CLOCK_START, import_agentchangebench, new_database
from tests.conftest import REPO, require_acb
from tests.servers.banking import conftest as bank
from tests.servers.helpers import fixture_snapshot

runner = CliRunner()


# --------------------------------------------------------------------------------------------------
# comparing one outcome: what counts as a representation-only difference


@pytest.mark.parametrize(("reference", "shiftbox"), [
    ({"a": 1, "b": "x"}, {"b": "x", "a": 1}),                                         # key order
    ([{"id": "t1"}], {"account_id": "acc_1", "items": [{"id": "t1"}], "truncated": False}),  # list wrapper
    ([{"customer_id": "c1"}], {"customer_id": "c1"}),                                   # one-element list
    ("sara_doe_496", {"user_ids": ["sara_doe_496"]}),                                   # a bare value wrapped
    ({"amount": 100}, {"amount": 100.0}),                                               # number formatting
    ({"count": "1", "logged": "True"}, {"count": 1, "logged": True}),                   # stringified scalars
    ({"created_at": "2025-01-01 00:00:00"}, {"created_at": "2025-01-01T00:00:00"}),     # date formatting
    ({"phone_number": "555-123-7890"}, {"phone_number": "+15551237890"}),               # phone formats
    ({"card_id": "c1", "status": "Locked"}, {"card_id": "c1", "last4": "1", "status": "Locked"}),  # more fields
])
def test_representation_only_differences(reference, shiftbox):
    outcome = compare_outcomes(json.dumps(reference), False, shiftbox, False, ids={})
    assert outcome.equal and not outcome.identical, outcome.differences


def test_identical_means_same_json_in_the_same_order():
    outcome = compare_outcomes('{"a": 1, "b": [1, 2]}', False, {"a": 1, "b": [1, 2]}, False, ids={})
    assert outcome.identical and outcome.equal


@pytest.mark.parametrize(("reference", "shiftbox", "where"), [
    ({"status": "Locked"}, {"status": "Active"}, "status"),
    ({"customer_id": "c1", "dispute_ids": []}, {"customer_id": "c1"}, "dispute_ids"),   # a field dropped
    ([{"id": "t1"}, {"id": "t2"}], {"items": [{"id": "t1"}]}, "length"),
    ({"phone_number": "555-123-7890"}, {"phone_number": "+15551237891"}, "phone_number"),
    ("Transfer successful", {"message": "Transfer successful; later"}, ""),
])
def test_content_differences_name_the_field(reference, shiftbox, where):
    text = reference if isinstance(reference, str) else json.dumps(reference)
    outcome = compare_outcomes(text, False, shiftbox, False, ids={})
    assert not outcome.equal
    assert any(where in d for d in outcome.differences), outcome.differences


def test_generated_ids_are_mapped_not_compared():
    ids: dict[str, str] = {}
    created = compare_outcomes('{"request_id": "PR_00000001", "status": "Awaiting Payment"}', False,
                               {"request_id": "req_000002", "status": "Awaiting Payment"}, False, ids=ids,
                               learn=True)
    assert created.equal and ids == {"PR_00000001": "req_000002"}
    later = compare_outcomes('{"reference": "PR_00000001"}', False, {"reference": "req_000002"}, False, ids=ids)
    assert later.equal
    wrong = compare_outcomes('{"reference": "PR_00000001"}', False, {"reference": "req_000003"}, False, ids=ids)
    assert not wrong.equal


def test_both_failing_is_the_same_outcome_whatever_the_wording():
    outcome = compare_outcomes("Error: Card 1234 not found", True, "Error (not_found): no card with id '1234'",
                               True, ids={})
    assert outcome.equal and not outcome.identical


# --------------------------------------------------------------------------------------------------
# the deliberate-differences table: one source, the docs


def test_the_docs_table_is_the_source_and_every_row_is_complete():
    rows = load_deliberate_differences(REPO / "docs" / "servers.md")
    assert rows, "docs/servers.md has no 'Deliberate differences from the reference tools' table"
    for row in rows:
        assert row.klass in UNEXPLAINED_CLASSES, row
        assert row.reason.strip() and row.tool and row.domain, row
    banking = {r.tool for r in rows if r.domain == "banking"}
    assert {"transfer_to_human_agents", "file_dispute"} <= banking


def test_table_rows_match_by_tool_class_and_terms(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("# x\n\n## Deliberate differences from the reference tools\n\n"
                   "| domain | tool | class | when | reason |\n|---|---|---|---|---|\n"
                   "| banking | `file_dispute` | shiftbox succeeds | `DISPUTED` | the reference crashed |\n"
                   "| banking | * | content differs | `fields: created_at, timestamp` | clocks differ |\n\n"
                   "## next section\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    rows = load_deliberate_differences(doc)
    assert [(r.tool, r.klass) for r in rows] == [("file_dispute", "shiftbox_succeeds"), ("*", "content_differs")]
    assert rows[0].matches("banking", "file_dispute", "shiftbox_succeeds", "Error: DISPUTED", [])
    assert not rows[0].matches("banking", "file_dispute", "shiftbox_succeeds", "Error: other", [])
    assert not rows[0].matches("retail", "file_dispute", "shiftbox_succeeds", "Error: DISPUTED", [])
    assert rows[1].matches("banking", "get_transactions", "content_differs", "",
                           ["transactions[0].timestamp: '2025-08-21 08:00:02' != '2025-07-01T09:03:00'"])
    assert not rows[1].matches("banking", "get_transactions", "content_differs", "",
                               ["transactions[0].timestamp: a != b", "transactions[0].amount: 1 != 2"])


def test_a_row_can_name_the_tool_sets_it_covers(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("## Deliberate differences from the reference tools\n\n"
                   "| domain | tool | class | when | reason |\n|---|---|---|---|---|\n"
                   "| banking | `get_customer_by_phone` | shiftbox succeeds | `toolsets: default` | normalized |\n")
    (row,) = load_deliberate_differences(doc)
    assert row.toolsets == {"default"} and row.terms == ()
    assert row.matches("banking", "get_customer_by_phone", "shiftbox_succeeds", "", [], toolset="default")
    assert not row.matches("banking", "get_customer_by_phone", "shiftbox_succeeds", "", [],
                           toolset="agentchangebench")


# --------------------------------------------------------------------------------------------------
# the command on a small hand-built results file (the banking test snapshot, ids known by heart)


def _snapshot(tmp_path: Path) -> Path:
    tables = [("customers", bank.CUSTOMERS), ("accounts", bank.ACCOUNTS), ("cards", bank.CARDS),
              ("statements", bank.STATEMENTS), ("transactions", bank.TRANSACTIONS), ("payees", bank.PAYEES),
              ("payment_requests", bank.PAYMENT_REQUESTS), ("disputes", bank.DISPUTES)]
    fixture_snapshot(new_database(), tmp_path / "snap", domain="banking", clock_start=CLOCK_START, tables=tables)
    return tmp_path / "snap"


ACCOUNT_A1 = {"account_id": "acc_a1", "customer_id": "cust_a", "type": "checking", "is_business": False,
              "masked_number": "••••1111", "status": "Active", "current_balance": 1000.0, "available_balance": 950.0}
TX = {  # acc_a1's transactions as the reference would list them, newest first (tx_2 not yet disputed)
    "tx_5": ("2025-06-22 18:45:00", "card_purchase", -15.0, "Cinema", "Disputed", ""),
    "tx_4": ("2025-06-21 09:00:00", "card_purchase", -10.0, "Cafe", "Reversed", ""),
    "tx_3": ("2025-06-20 08:30:00", "deposit", 500.0, "Payroll", "Posted", ""),
    "tx_2": ("2025-06-15 12:00:00", "card_purchase", -89.99, "UNKNOWN MERCHANT", "Posted", "SUSPICIOUS_CHARGE"),
    "tx_1": ("2025-06-01 10:00:00", "card_purchase", -40.0, "Grocer", "Posted", ""),
}
TX_LIST = [{"tx_id": k, "account_id": "acc_a1", "timestamp": v[0], "type": v[1], "amount": v[2],
            "merchant_or_payee": v[3], "status": v[4], "reference": v[5]} for k, v in TX.items()]

CALLS = [  # (tool, arguments, reference tool message, reference error, expected class)
    ("get_account", {"account_id": "acc_a1"}, json.dumps(ACCOUNT_A1, ensure_ascii=False), False, "identical"),
    ("get_account", {"account_id": "acc_a1"},
     json.dumps({k: v for k, v in ACCOUNT_A1.items() if k != "is_business"} | {"current_balance": 1000}),
     False, "representation"),
    ("get_account", {"account_id": "acc_a2"}, json.dumps({"account_id": "acc_a2", "current_balance": 1.0}),
     False, "content_differs"),
    ("get_transactions", {"account_id": "acc_a1", "start_time": "last week"}, "[]", False, "stricter"),
    ("lock_card", {"card_id": "1234"}, "Error: Card 1234 not found", True, "representation"),
    ("create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1",
                                "amount": 5}, json.dumps({"request_id": "PR_00000001", "status": "Awaiting Payment"}),
     False, "representation"),
    ("authorize_payment_request", {"request_id": "PR_00000001"},
     json.dumps({"request_id": "PR_00000001", "status": "Authorized"}), False, "cascade"),
    ("file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2", "reason_code": "unauthorized"}, "Error: DISPUTED",
     True, "shiftbox_succeeds"),
    ("get_transactions", {"account_id": "acc_a1"}, json.dumps(TX_LIST), False, "cascade"),
    ("log_shift_event", {"turn_no": 3, "from_class": "A", "to_class": "B", "trigger_terms": [],
                         "requires_reauth": False}, json.dumps({"logged": "True", "count": "1"}), False,
     "tool_missing"),
]


def _results_file(tmp_path: Path, calls=CALLS) -> Path:
    messages: list[dict] = [{"role": "assistant", "content": "Hi", "turn_idx": 0},
                            {"role": "user", "content": "help", "turn_idx": 1}]
    for n, (tool, args, text, error, _) in enumerate(calls):
        messages.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"c{n}", "name": tool, "arguments": args, "requestor": "assistant"}]})
        messages.append({"role": "tool", "id": f"c{n}", "content": text, "error": error, "requestor": "assistant"})
    messages.append({"role": "user", "content": "bye ###STOP###"})
    task = {"id": "t1", "user_scenario": {"persona": "p", "instructions": {"domain": "banking",
                                                                          "reason_for_call": "help"}},
            "evaluation_criteria": {"nl_assertions": ["polite"]}}
    path = tmp_path / "results.json"
    path.write_text(json.dumps({
        "timestamp": "2025-01-01T00:00:00", "info": {"environment_info": {"domain_name": "banking"}},
        "tasks": [task], "simulations": [{"id": "sim-1", "task_id": "t1", "trial": 0, "seed": 1,
                                           "termination_reason": "user_stop", "messages": messages}]}))
    return path


def _replay(*args: str):
    return runner.invoke(app, ["conformance", "replay", *args])


def test_every_call_is_classified(tmp_path):
    res = _replay(str(_results_file(tmp_path)), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--toolset", "default", "--json")
    assert res.exit_code == 1, res.output          # get_account's content difference is unexplained
    report = json.loads(res.stdout)
    got = [(c["tool"], c["class"]) for c in report["calls"]]
    assert got == [(tool, expected) for tool, _, _, _, expected in CALLS]
    assert set(report["counts"]) <= set(CLASSES)
    assert report["counts"]["cascade"] == 2 and report["unexplained"] == 1
    assert [c["tool"] for c in report["calls"] if c["class"] in UNEXPLAINED_CLASSES and not c["deliberate"]] == [
        "get_account"]   # the malformed time and the missing log_shift_event are the default tools' rows
    dispute = report["calls"][7]
    assert dispute["deliberate"] and "crash" in dispute["deliberate"]   # the docs' row for file_dispute


def test_the_table_explains_what_is_deliberate_and_the_exit_code_follows(tmp_path):
    doc = tmp_path / "differences.md"
    doc.write_text("## Deliberate differences from the reference tools\n\n"
                   "| domain | tool | class | when | reason |\n|---|---|---|---|---|\n"
                   "| banking | `file_dispute` | shiftbox succeeds | `DISPUTED` | r1 |\n"
                   "| banking | `get_transactions` | shiftbox stricter | `last week` | r2 |\n"
                   "| banking | `get_account` | content differs | `fields: current_balance` | r3 |\n"
                   "| banking | `log_shift_event` | tool missing | | r4 |\n")
    res = _replay(str(_results_file(tmp_path)), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--toolset", "default", "--differences", str(doc), "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["unexplained"] == 0 and [c["deliberate"] for c in report["calls"] if c["deliberate"]] == [
        "r3", "r2", "r1", "r4"]


def test_parity_toolset_has_log_shift_event(tmp_path):
    res = _replay(str(_results_file(tmp_path, CALLS[-1:])), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--json")     # --toolset agentchangebench is the default here
    assert res.exit_code == 0, res.output
    assert [c["class"] for c in json.loads(res.stdout)["calls"]] == ["representation"]


CUST_B = {"customer_id": "cust_b", "full_name": "Ben Okafor", "date_of_birth": "1985-05-05",
          "email": "ben@example.com", "phone_number": "+15550002222",
          "address": {"street": "2 Oak Rd", "city": "Boise", "state": "ID", "postal_code": "83701"},
          "created_at": "2024-02-01 00:00:00", "account_ids": ["acc_b1"], "card_ids": ["card_b1"],
          "statement_ids": [], "payment_request_ids": ["req_b1"], "dispute_ids": [], "payee_ids": ["payee_b1"]}
NOT_FOUND = "Error: Customer with phone {} not found. Have you tried asking the customer for their phone?"
TX_B1 = [{"tx_id": "tx_b1", "account_id": "acc_b1", "timestamp": "2025-06-10 10:00:00", "type": "fee",
          "amount": -5.0, "merchant_or_payee": "Bank fee", "status": "Posted", "reference": ""}]
REFERENCE_RULES = [  # (tool, arguments, the reference's answer, reference error): its exact-match rules
    ("get_customer_by_phone", {"phone_number": "+15550002222"}, json.dumps(CUST_B), False),
    ("get_customer_by_phone", {"phone_number": "555-000-2222"}, NOT_FOUND.format("555-000-2222"), True),
    ("get_customer_by_phone", {"phone_number": "+1 555 000 2222"}, NOT_FOUND.format("+1 555 000 2222"), True),
    ("get_customer_by_name", {"full_name": "ben okafor", "dob": "1985-05-05"}, json.dumps([CUST_B]), False),
    ("get_customer_by_name", {"full_name": "Ben  Okafor", "dob": "1985-05-05"}, "[]", False),
    ("get_customer_by_name", {"full_name": "", "dob": ""}, "[]", False),
    ("get_customer_by_name", {"full_name": "Ben Okafor", "dob": "0000-00-00"}, "[]", False),
    ("get_transactions", {"account_id": "acc_b1", "start_time": "", "end_time": ""}, json.dumps(TX_B1), False),
    ("get_transactions", {"account_id": "acc_zz"}, "[]", False),
    ("get_statements", {"account_id": "acc_zz"}, "[]", False),
    ("lock_card", {"card_id": "card_b1", "reason": ""}, json.dumps({"card_id": "card_b1", "status": "Locked"}),
     False),
]


def test_agentchangebench_toolset_answers_as_the_reference_matched(tmp_path):
    """Formatted phone numbers are not found, empty optional strings mean "not given", an unknown account
    lists nothing: on the parity tool set these calls get the reference's outcome."""
    calls = [(*c, None) for c in REFERENCE_RULES]
    res = _replay(str(_results_file(tmp_path, calls)), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--toolset", "agentchangebench", "--json")
    report = json.loads(res.stdout)
    differing = [(c["tool"], c["arguments"], c["class"], c["differences"]) for c in report["calls"]
                 if c["class"] not in ("identical", "representation")]
    assert not differing, json.dumps(differing, indent=1)
    assert res.exit_code == 0


def test_native_toolset_differences_from_those_rules_are_rows_of_the_table(tmp_path):
    """The default tool set keeps its improvements (normalized phones, a malformed date named as such), and
    the docs' table names each of them for that tool set: nothing is unexplained."""
    calls = [(*c, None) for c in REFERENCE_RULES]
    res = _replay(str(_results_file(tmp_path, calls)), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--toolset", "default", "--json")
    report = json.loads(res.stdout)
    differing = {(c["tool"], json.dumps(c["arguments"])): c for c in report["calls"]
                 if c["class"] not in ("identical", "representation")}
    assert ("get_customer_by_phone", json.dumps({"phone_number": "555-000-2222"})) in differing
    assert ("get_customer_by_name", json.dumps({"full_name": "", "dob": ""})) in differing
    unexplained = [c for c in differing.values() if not c["deliberate"]]
    assert not unexplained, json.dumps(unexplained, indent=1)
    assert res.exit_code == 0


def test_human_readable_table_by_class_and_tool_with_examples(tmp_path):
    res = _replay(str(_results_file(tmp_path)), "--format", "agentchangebench", "--snapshot",
                  str(_snapshot(tmp_path)), "--toolset", "default")
    assert res.exit_code == 1
    out = res.output
    for heading in ("class", "tool", "identical", "representation", "stricter", "shiftbox succeeds",
                    "content differs", "tool missing", "cascade", "examples"):
        assert heading in out, heading
    assert "current_balance" in out       # an example names the differing field
    assert "unexplained" in out


def test_bad_input_is_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert _replay(str(bad), "--format", "agentchangebench").exit_code == 2
    assert _replay(str(_results_file(tmp_path)), "--format", "tau9").exit_code == 2
    res = _replay(str(_results_file(tmp_path)), "--format", "agentchangebench", "--snapshot",
                  str(tmp_path / "nowhere"))
    assert res.exit_code == 2 and "snapshot" in res.output


# --------------------------------------------------------------------------------------------------
# the two recorded banking runs of ../shared


@pytest.fixture(scope="module")
def acb_snapshot(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("acb")
    import_agentchangebench(require_acb("banking", "db.toml"), directory)
    return directory


CRASHES = {("file_dispute", "shiftbox_succeeds"), ("get_transactions", "shiftbox_succeeds")}
"""Where the reference crashed: the only calls the parity tool set may answer otherwise than a failure."""


@pytest.mark.parametrize(("name", "calls", "counts"), [
    ("banking_test_run.json", 84,
     {"identical": 6, "representation": 70, "shiftbox_succeeds": 4, "content_differs": 2, "cascade": 2}),
    ("banking_gpt-4.1_2025-08-23.json", 78,
     {"identical": 9, "representation": 54, "shiftbox_succeeds": 2, "content_differs": 4, "cascade": 9}),
])
def test_recorded_runs_have_no_unexplained_difference(acb_snapshot, name, calls, counts):
    """On the parity tool set (the default here) a call is only stricter or succeeds where the reference
    crashed; its content differs only where the reference's clock or data did (the table's rows)."""
    path = require_acb("simulations", name)
    res = _replay(str(path), "--format", "agentchangebench", "--snapshot", str(acb_snapshot), "--json")
    report = json.loads(res.stdout)
    assert report["toolset"] == "agentchangebench" and len(report["calls"]) == calls
    unexplained = [c for c in report["calls"] if c["class"] in UNEXPLAINED_CLASSES and not c["deliberate"]]
    assert not unexplained, json.dumps(unexplained[:3], indent=1)
    assert res.exit_code == 0
    outcome = {(c["tool"], c["class"]) for c in report["calls"] if c["class"] in ("stricter", "shiftbox_succeeds")}
    assert outcome <= CRASHES, outcome - CRASHES
    assert {c["tool"] for c in report["calls"] if c["class"] == "content_differs"} <= {
        "get_transactions", "check_payment_request"}      # times and db.toml's later rows, not tool behaviour
    assert report["counts"] == counts


@pytest.mark.parametrize("name", ["banking_test_run.json", "banking_gpt-4.1_2025-08-23.json"])
def test_recorded_runs_on_the_default_toolset_are_explained_by_its_rows(acb_snapshot, name):
    """The default tools differ more (normalized phones, checked dates, records for writes): every such
    difference is a row of the table for that tool set."""
    res = _replay(str(require_acb("simulations", name)), "--format", "agentchangebench", "--snapshot",
                  str(acb_snapshot), "--toolset", "default", "--json")
    report = json.loads(res.stdout)
    unexplained = [c for c in report["calls"] if c["class"] in UNEXPLAINED_CLASSES and not c["deliberate"]]
    assert not unexplained, json.dumps(unexplained[:3], indent=1)
    assert res.exit_code == 0


def test_a_row_holding_unicode_line_separators_is_one_row(tmp_path):
    """Markdown ends a line at \\n (or \\r) only: a reason holding U+2028, U+2029 or U+0085 stays in its row."""
    doc = tmp_path / "d.md"
    doc.write_text("## Deliberate differences from the reference tools\n\n"
                   "| domain | tool | class | when | reason |\n|---|---|---|---|---|\n"
                   "| banking | `file_dispute` | shiftbox succeeds | `DISPUTED` | one\u2028two\u2029three\x85four |\n"
                   "| banking | * | content differs | `fields: timestamp` | clocks differ |\n", encoding="utf-8")
    assert [(r.tool, r.reason) for r in load_deliberate_differences(doc)] == [
        ("file_dispute", "one\u2028two\u2029three\x85four"), ("*", "clocks differ")]

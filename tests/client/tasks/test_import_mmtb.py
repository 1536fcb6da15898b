"""MMTB's JSONL format end to end: a small file in that format (tests/servers/mmtb/mmtb_file.py) imported with
`shiftbox tasks import-mmtb`, validated, and run with the scripted oracle on the mmtb domain: every tool result the
agent received is the observation annotated for that gold call, and the run's metrics are computed."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.tasks import TaskFile
from tests.servers.mmtb.mmtb_file import HOLIDAY, TRIP, write_mmtb_file

runner = CliRunner()


def _cli(*args: str):
    res = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res


def test_import_gives_one_goal_per_mission_with_mmtb_types_and_gold_calls(tmp_path):
    source = write_mmtb_file(tmp_path / "mmtb.jsonl")
    res = _cli("tasks", "import-mmtb", str(source), "--snapshot", str(tmp_path / "snap"), "--out",
               str(tmp_path / "tasks.json"))
    assert "2 mmtb tasks" in res.stdout
    task_file = TaskFile.model_validate_json((tmp_path / "tasks.json").read_text())
    assert task_file.snapshot == "mmtb/v1" and task_file.domain == "mmtb"
    trip, holiday = task_file.tasks
    assert (trip.id, holiday.id) == ("rec_trip", "rec_holiday")  # a list id is joined, as MMTB joins it
    # by hand from the records' type codes and dependency lists
    assert trip.action_types == {"mission_1": "single", "mission_2": "parallel", "mission_3": "clarify",
                                 "mission_4": "serial"}
    assert holiday.action_types == {"mission_1": "serial", "mission_2": "chat"}
    assert "mission_1=多 serial+parallel" in holiday.description.notes
    # MMTB's own types, serial+parallel too (the action types have no such type), in a field of the task
    assert holiday.user_scenario.goal_shifts.mission_types == {"mission_1": "serial+parallel", "mission_2": "chat"}
    assert trip.user_scenario.goal_shifts.mission_types == trip.action_types
    assert trip.user_scenario.goal_shifts.required_shifts == 3
    calls = [(a.goal, a.allowed_tools[0].function_name, a.allowed_tools[0].params, a.depends_on)
             for a in trip.evaluation_criteria.action_sets]
    assert calls == [
        ("mission_1", "get_weather", {"city": "Lisbon"}, []),
        ("mission_2", "get_weather", {"city": "Porto"}, []),
        ("mission_2", "get_weather", {"city": "Faro"}, []),
        ("mission_3", "search_flights", {"origin": "Lisbon", "destination": "Porto", "date": "2025-06-10"}, []),
        ("mission_4", "search_flights", {"origin": "Lisbon", "destination": "Porto", "date": "2025-06-10"}, []),
        ("mission_4", "book_flight", {"flight_no": "FR8311", "seats": 2}, ["m4.0"]),
    ]
    assert "On 2025-06-10." in trip.user_scenario.instructions.known_info  # the clarification's answer
    assert trip.user_scenario.instructions.reason_for_call == "What's the weather in Lisbon?"
    assert holiday.action_sets_for("mission_2") == []  # chat: no tool
    validated = runner.invoke(app, ["tasks", "validate", str(tmp_path / "tasks.json"), "--snapshot",
                                    str(tmp_path / "snap"), "--json"])
    assert validated.exit_code == 0, validated.output
    findings = json.loads(validated.stdout)  # only the chat mission, which no tool call checks, is worth a warning
    assert [(f["task_id"], f["field"], f["severity"]) for f in findings] == [
        ("rec_holiday", "user_scenario.goal_shifts.goals[1]", "warning")]


def test_the_oracle_run_gets_the_annotated_observations_and_metrics(tmp_path):
    source = write_mmtb_file(tmp_path / "mmtb.jsonl")
    snap, tasks, out = tmp_path / "snap", tmp_path / "tasks.json", tmp_path / "run"
    _cli("tasks", "import-mmtb", str(source), "--snapshot", str(snap), "--out", str(tasks))
    _cli("run", "--domain", "mmtb", "--tasks", str(tasks), "--snapshot", str(snap), "--agent", "scripted:oracle",
         "--user", "scripted", "--out", str(out))
    annotated = {}  # (task, tool, arguments) -> the observations annotated for it, in order
    for record in (TRIP, HOLIDAY):
        task_id = record["id"] if isinstance(record["id"], str) else "".join(record["id"])
        for steps in record["english_answer_list"]:
            for s in steps:
                if s["action"]["name"] not in ("prepare_to_answer", "ask_user_for_required_parameters"):
                    key = (task_id, s["action"]["name"], json.dumps(s["action"]["arguments"], sort_keys=True))
                    annotated.setdefault(key, []).append(s["observation"])
    received = {}
    for line in (out / "trajectories.jsonl").read_text().splitlines():
        t = json.loads(line)
        for c in t["tool_calls"]:
            assert not c["is_error"], c
            key = (t["task_id"], c["name"], json.dumps(c["arguments"], sort_keys=True))
            received.setdefault(key, []).append(c["result"])
    # every gold call was made once and answered with its annotation; a string observation arrives as its text
    assert received == annotated
    metrics = json.loads(_cli("metrics", str(out), "--json").stdout)
    # by hand: 2 records, 6 + 3 gold calls, 4 + 2 missions (goals), 3 + 1 goal shifts
    assert (metrics["simulations"], metrics["tool_calls"], metrics["paths"]["goals"]) == (2, 9, 6)
    assert metrics["gsrt"]["shifts"] == 4 and metrics["by_domain"]["mmtb"]["simulations"] == 2
    assert metrics["tsr"]["action"] == 1.0  # every gold call made and answered
    # the calls are checked against the tools the mmtb server served (its snapshot's, recorded in the trajectory):
    # every oracle call fits its schema, so TUE's P = 1 (it read the domain's declared tools, none: P = 0)
    assert (metrics["tue"]["calls"], metrics["tue"]["p"]) == (9, 1.0)
    # MMTB's path evaluation, goal by goal, by hand:
    # trip 1 (single): the oracle's first reply asks for the customer's identity, a text while the call is due: fails;
    # trip 2 (parallel): both get_weather calls in one step, then the answer: right and optimal;
    # trip 3 (clarify): asks for the date, then searches, then answers: right (ask, call, answer);
    # trip 4 (serial): its search was made in trip 3, so its gold is book then answer; the oracle searches again:
    #   a call no candidate step holds: fails;
    # holiday 1 (serial+parallel): the identity question again: fails, 0 of its 4 gold steps matched;
    # holiday 2 (chat): answered with text: right.
    paths = metrics["paths"]
    assert (paths["goals"], paths["accuracy"]) == (6, 3 / 6)
    assert (paths["optimal_goals"], paths["optimal"]) == (2, 1 / 2)  # trip 2 optimal, holiday 1 not
    # progress pools the goals MMTB's types call serial or serial+parallel: trip 4 (its search made earlier, gold
    # book + answer: 0 of 2 matched) and holiday 1 (0 of 4)
    assert (paths["progress_goals"], paths["progress"]) == (2, 0 / (2 + 4))
    assert paths["by_type"]["clarify"]["accuracy"] == 1.0


def test_validating_on_a_snapshot_whose_tools_it_serves_loads_it_once(tmp_path, monkeypatch):
    """The mmtb snapshot was loaded twice by `validate_tasks`: for the tools the calls are checked against (they come
    with it), then for the replay of the gold calls."""
    from pathlib import Path

    from shiftbox.tasks import import_domain_tasks, validate_tasks

    snap = tmp_path / "snap"
    task_file = import_domain_tasks("mmtb", "mmtb", write_mmtb_file(tmp_path / "mmtb.jsonl"), snap)
    reads = []
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: (self.parent == snap and reads.append(self.name))
                        or read_bytes(self))
    findings = validate_tasks(task_file, snap)
    assert sorted(reads) == ["db.sqlite", "manifest.json"]
    assert [(f.task_id, f.severity) for f in findings] == [("rec_holiday", "warning")]  # as the CLI finds above

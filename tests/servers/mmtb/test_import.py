"""The mmtb domain's reading of MMTB's format: malformed records are refused naming line, record and field; a call
no gold call annotates is a tool error; repeated gold calls get their annotations in order."""

from __future__ import annotations

import copy
import json

import anyio
import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain
from shiftbox_servers.mmtb._import import import_mmtb
from shiftbox_servers.mmtb._records import RecordFormatError, read_mmtb_file
from tests.servers.mmtb.mmtb_file import HOLIDAY, TRIP, write_mmtb_file


def _broken(change) -> list[dict]:
    trip = copy.deepcopy(TRIP)
    change(trip)
    return [trip, HOLIDAY]


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["type"].__setitem__(1, "x"), "line 1 (record rec_trip): field 'type[1]' is 'x'"),
    (lambda r: r["english_answer_list"].pop(), "field 'english_answer_list' has 3 items for 4 missions"),
    (lambda r: r["english_answer_list"][0][0].pop("observation"), "field 'english_answer_list[0][0].observation'"),
    (lambda r: r["english_answer_list"][0][0]["action"].__setitem__("name", "nope"),
     "names tool 'nope', which is not among the record's tools"),
    (lambda r: r["english_answer_list"][2][0].pop("user_input"), "field 'english_answer_list[2][0].user_input'"),
    (lambda r: r["english_answer_list"][1][1].__setitem__("dependency_list", [7]),
     "field 'english_answer_list[1][1].dependency_list' names [7], no earlier step's idx"),
    (lambda r: r["type"].__setitem__(0, "拒"), "holds tool calls (get_weather) in a chat mission"),
    (lambda r: r.pop("english_tools"), "field 'english_tools' is missing"),
])
def test_a_malformed_record_is_refused_naming_line_record_and_field(tmp_path, change, message):
    source = write_mmtb_file(tmp_path / "bad.jsonl", _broken(change))
    with pytest.raises(RecordFormatError, match="bad.jsonl line 1") as caught:
        import_mmtb(source, tmp_path / "snap")
    assert message in str(caught.value)


def test_a_tool_two_records_define_differently_is_refused(tmp_path):
    holiday = copy.deepcopy(HOLIDAY)
    holiday["english_tools"][1]["function"]["description"] = "Another weather tool."
    with pytest.raises(RecordFormatError, match=r"line 2 \(record rec_holiday\): tool 'get_weather' differs from its "
                                                r"definition in record rec_trip \(line 1\)"):
        import_mmtb(write_mmtb_file(tmp_path / "two.jsonl", [TRIP, holiday]), tmp_path / "snap")


def test_calls_get_the_annotated_observations_and_others_a_tool_error(tmp_path):
    import_mmtb(write_mmtb_file(tmp_path / "mmtb.jsonl"), tmp_path / "snap")
    server = DomainServer(get_domain("mmtb"), Snapshot.load(tmp_path / "snap"))

    async def calls():
        async with Client(server.mcp) as client:
            listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            flights = {"origin": "lisbon", "destination": " Porto", "date": "2025-06-10"}  # case, spaces ignored
            return listed, [await client.call_tool(name, args) for name, args in [
                ("search_flights", flights), ("search_flights", flights), ("search_flights", flights),
                ("get_weather", {"city": "Madrid"}),  # annotated, but in the other record
                ("book_flight", {"flight_no": "FR8311", "seats": "2"}),  # a string for an integer
            ]]

    listed, results = anyio.run(calls)
    assert sorted(listed) == ["book_flight", "get_holidays", "get_weather", "search_flights"]
    assert listed["get_holidays"]["properties"] == {}  # MMTB's {"": {}} placeholder: no parameter
    assert listed["book_flight"]["required"] == ["flight_no", "seats"]
    flights = TRIP["english_answer_list"][2][1]["observation"]
    first, second, third, other, wrong_type = results
    for result in (first, second, third):  # two annotations, then the last one again
        assert not result.is_error and json.loads(result.content[0].text) == flights
    assert other.is_error and "no gold call of task 'rec_trip' (this conversation's)" in other.content[0].text
    assert wrong_type.is_error and "'seats'" in wrong_type.content[0].text


def test_a_record_holding_unicode_line_separators_is_read_whole(tmp_path):
    """JSON keeps U+2028, U+2029 and U+0085 raw inside a string (json.dumps with ensure_ascii=False writes them so);
    a line of the file ends at "\\n" only, so such a record is one line, not a torn one refused as not JSON."""
    trip = copy.deepcopy(TRIP)
    trip["english_answer_list"][0][-1]["observation"] = "one\u2028two\u2029three\x85four"
    (record, _) = read_mmtb_file(write_mmtb_file(tmp_path / "odd.jsonl", [trip, HOLIDAY]))
    assert (record.id, record.missions[0].steps[-1].observation) == ("rec_trip", "one\u2028two\u2029three\x85four")

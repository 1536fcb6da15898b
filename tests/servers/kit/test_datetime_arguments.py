"""Date-time arguments (kit `IsoDateOrDateTime`): every RFC 3339 / ISO 8601 extended form is accepted and
normalized to snapshot time (UTC, without offset); the published pattern says the same as the validator."""

from __future__ import annotations

import re

import pytest
from pydantic import TypeAdapter, ValidationError

from shiftbox_servers.kit import IsoDateOrDateTime, registered_domains

ADAPTER = TypeAdapter(IsoDateOrDateTime)
PATTERN = re.compile(ADAPTER.json_schema()["pattern"])

ACCEPTED = {
    "2025-06-15": "2025-06-15",
    "2025-06-15T12:00:00": "2025-06-15T12:00:00",
    "2025-06-15 12:00:00": "2025-06-15T12:00:00",
    "2025-06-15T12:00": "2025-06-15T12:00:00",
    "2025-06-15T12:00:00Z": "2025-06-15T12:00:00",
    "2025-06-15t12:00:00z": "2025-06-15T12:00:00",
    "2025-06-15T14:00:00+02:00": "2025-06-15T12:00:00",
    "2025-06-15T14:00:00+0200": "2025-06-15T12:00:00",
    "2025-06-15T14:00:00+02": "2025-06-15T12:00:00",
    "2025-06-15T07:30:00-04:30": "2025-06-15T12:00:00",
    "2025-06-15T00:30:00+01:00": "2025-06-14T23:30:00",
    "2025-06-15T12:00:00-00:00": "2025-06-15T12:00:00",
    "2025-06-15T12:00:00.5Z": "2025-06-15T12:00:00.500000",
    "2025-06-15T12:00:00,25Z": "2025-06-15T12:00:00.250000",
    "2025-06-15T12:00:00.123456789+00:00": "2025-06-15T12:00:00.123456",
    "2025-06-15T12:00:00.000Z": "2025-06-15T12:00:00",
    "2016-12-31T23:59:60Z": "2016-12-31T23:59:59.999999",       # a leap second: the last instant of its minute
    "2025-06-15T12:00:00.5": "2025-06-15T12:00:00.500000",
}
REJECTED = ["", "yesterday", "2025-06-15T", "2025-06-15Z", "2025-06-15T12", "2025-06-15T12:00:00 Z",
            "2025-06-15T12:00:00+25:00", "2025-06-15T12:00:00+02:60", "2025-06-15T24:00:00Z",
            "2025-06-15T12:60:00Z", "2025-02-30T12:00:00Z", "2025-06-15T12:00:00.Z", "2025-06-15T12:00:00ZZ",
            "20250615T120000Z", "2025-06-15T12:00:00+2:00", "2025-6-15T12:00:00Z", "2025-06-15T12:00:61Z"]


@pytest.mark.parametrize(("value", "normalized"), ACCEPTED.items())
def test_accepted_and_normalized_to_snapshot_time(value, normalized):
    assert ADAPTER.validate_python(value) == normalized
    assert PATTERN.match(value), "the published pattern must accept what the validator accepts"


@pytest.mark.parametrize("value", REJECTED)
def test_rejected(value):
    with pytest.raises(ValidationError):
        ADAPTER.validate_python(value)


def test_pattern_rejects_what_only_the_calendar_can_refuse():
    """The pattern is a syntax check; impossible dates and times fail in the validator."""
    for value in REJECTED:
        if PATTERN.match(value):
            assert value in {"2025-06-15T12:00:00+25:00", "2025-06-15T12:00:00+02:60", "2025-06-15T24:00:00Z",
                             "2025-06-15T12:60:00Z", "2025-02-30T12:00:00Z", "2025-06-15T12:00:61Z"}, value


def _date_time_fields():
    for domain in registered_domains().values():
        for spec in domain.tools:
            schema = spec.arguments_model.model_json_schema()
            for name, prop in schema.get("properties", {}).items():
                options = prop.get("anyOf", [prop])
                if any("pattern" in o and ":" in o["pattern"] for o in options):
                    yield domain.name, spec, name


def test_some_tool_takes_a_date_time():
    assert {(d, s.name, f) for d, s, f in _date_time_fields()} >= {
        ("banking", "get_transactions", "start_time"), ("banking", "create_payment_request", "expires_at")}


@pytest.mark.parametrize("value", ["2025-06-15T12:00:00Z", "2025-06-15T14:00:00+02:00", "2025-06-15T12:00:00.25Z"])
def test_every_date_time_parameter_of_every_domain_accepts_rfc3339(value):
    for domain, spec, field in _date_time_fields():
        required = {k: f for k, f in spec.arguments_model.model_fields.items() if f.is_required()}
        samples = {"account_id": "acc_1", "customer_id": "cust_1", "from_account_id": "acc_1",
                   "to_payee_id": "payee_1", "amount": 1.0}
        args = {k: samples[k] for k in required if k != field}
        try:
            spec.arguments_model.model_validate({**args, field: value})
        except ValidationError as exc:
            pytest.fail(f"{domain}.{spec.name}({field}={value!r}) rejected: {exc}")

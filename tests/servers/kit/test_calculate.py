"""The kit's safe arithmetic evaluator (the `calculate` tool of retail and airline): never `eval`."""

from __future__ import annotations

import pytest

from shiftbox_servers.kit import ErrorKind, InvalidArguments, evaluate_arithmetic


@pytest.mark.parametrize(("expression", "value"), [
    ("2 + 2", 4.0), ("2+3*4", 14.0), ("(2 + 3) * 4", 20.0), ("10 / 4", 2.5), ("100 / 3", 33.33),
    ("2 / 3", 0.67), ("-5 + 2", -3.0), ("+5", 5.0), ("--5", 5.0), ("-(3 - 5) * 1.5", 3.0), ("0.1 + 0.2", 0.3),
    ("1819.92 - 272.33 - 262.47", 1285.12), (" 7 ", 7.0), ("3.", 3.0), (".5 * 2", 1.0), ("1 - 1", 0.0),
    ("(((((1)))))", 1.0), ("9" * 199, float("9" * 199)), ("1+" * 60 + "1", 61.0), ("-" * 40 + "1", 1.0),
    ("(1)+" * 40 + "(1)", 41.0), ("(" * 32 + "1" + ")" * 32, 1.0),
])
def test_valid_expressions(expression, value):
    assert evaluate_arithmetic(expression) == value


def test_the_largest_values_200_characters_allow_stay_finite():
    # every character adds at most one decimal order, so 200 characters cannot overflow a float
    assert evaluate_arithmetic("9" * 99 + " * " + "9" * 98) == float("9" * 99) * float("9" * 98)
    assert evaluate_arithmetic("1 / 0." + "0" * 190 + "1") == pytest.approx(1e191)


def test_result_is_rounded_to_cents_and_never_negative_zero():
    assert evaluate_arithmetic("1.005 * 1000") == 1005.0
    assert evaluate_arithmetic("10 / 3 * 3") == 10.0
    assert str(evaluate_arithmetic("-0.001")) == "0.0"


@pytest.mark.parametrize(("expression", "words"), [
    ("__import__('os')", "invalid characters"),
    ("__import__('os').system('true')", "invalid characters"),
    ("1;2", "invalid characters"),
    ("2**99999", "only numbers"),
    ("9**9**9", "only numbers"),
    ("7 // 2", "only numbers"),
    ("7 % 2", "invalid characters"),
    ("abs(-1)", "invalid characters"),
    ("1e308 * 10", "invalid characters"),
    ("1 / 0", "division by zero"),
    ("1 / (2 - 2)", "division by zero"),
    ("1 / 0.0", "division by zero"),
    ("", "empty"),
    ("   ", "empty"),
    ("1 +", "not valid arithmetic"),
    ("()", "only numbers"),
    ("(1, 2)", "invalid characters"),
    ("1 2", "not valid arithmetic"),
    ("1..2", "not valid arithmetic"),
    ("[1]", "invalid characters"),
    ("1\n+1", "invalid characters"),
    ("1" * 201, "too long"),
    ("(" * 33 + "1" + ")" * 33, "nested too deeply"),
    ("-" * 120 + "1", "nested too deeply"),
    ("+-" * 60 + "1", "nested too deeply"),
    ("9" * 150 + " * " + "9" * 45 + " * ", "too long"),
])
def test_everything_else_is_invalid_arguments(expression, words):
    with pytest.raises(InvalidArguments) as info:
        evaluate_arithmetic(expression)
    assert info.value.kind == ErrorKind.INVALID_ARGUMENTS
    assert words in str(info.value), str(info.value)
    assert info.value.field == "expression"


def test_eval_is_never_called(monkeypatch):
    import builtins

    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec must not be used")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert evaluate_arithmetic("(1 + 2) * 3") == 9.0

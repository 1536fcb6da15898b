"""The kit's bounded JSON and TOML loaders (`load_json_file`, `load_toml_file`): nesting measured before parsing,
numbers that are not finite refused, every error an InputFileError naming the source."""

from __future__ import annotations

import random
import re

import pytest

from shiftbox_servers import kit
from shiftbox_servers.kit._input_files import InputFileError
from tests.conftest import require_acb


@pytest.mark.parametrize(("text", "depth"), [
    ("1", 0), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ('["[[[", "\\"]]]"]', 1), ('{"a": "{"}\n[[1]]\n', 2),
])
def test_json_depth_counts_brackets_outside_strings(text, depth):
    assert kit.json_depth(text) == depth


def reference_depth(text: str) -> int:
    """The deepest nesting, bracket by bracket: strings (quote to quote on one line, escapes skipped) cut out first."""
    depth = deepest = 0
    for char in re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text):
        if char in "[{]}":
            depth += 1 if char in "[{" else -1
            deepest = max(deepest, depth)
    return deepest


def test_json_depth_is_the_bracket_by_bracket_depth_on_any_text():
    """Balanced text is measured a level a pass; unbalanced, torn or very deep text falls back: the same figure."""
    rng = random.Random(34)
    texts = ["".join(rng.choice('[]{}"\\\na,: ') for _ in range(rng.randint(0, 60))) for _ in range(5000)]
    texts += ["[" * 100 + "]" * 100, "[" * 101 + "]" * 101, "[" * 5000, "]]][[[", '{"a": [1, 2]', "[" * 20_000 + "]" * 20_000,
              '[{"a": "x\\"]"}, [[]], {}]\n[[[]]]', '"unterminated [[\n[1]']
    assert [kit.json_depth(t) for t in texts] == [reference_depth(t) for t in texts]


@pytest.mark.parametrize("depth", [100, 101])
def test_json_is_read_up_to_the_limit(tmp_path, depth):
    path = tmp_path / "x.json"
    path.write_text("[" * depth + "]" * depth)
    if depth <= 100:
        assert kit.load_json_file(path) is not None
    else:
        with pytest.raises(InputFileError, match=r"x.json: nested deeper than 100 levels"):
            kit.load_json_file(path)


def test_json_strings_that_look_deep_are_data():
    assert kit.loads_json('{"a": "' + "[" * 500 + '"}', "s") == {"a": "[" * 500}


def test_toml_nesting_counts_brackets_and_key_dots_not_strings_or_comments(tmp_path):
    path = tmp_path / "db.toml"
    path.write_text('a = "' + "[" * 300 + '"\n# ' + "." * 300 + "\nb = '''" + "{." * 300 + "'''\nc = [1.5, 2.5]\n"
                    "d.e.f = 1979-05-27T07:32:00.999\n")
    loaded = kit.load_toml_file(path)
    assert (loaded["a"], loaded["b"], loaded["c"], list(loaded["d"]["e"])) == ("[" * 300, "{." * 300, [1.5, 2.5], ["f"])
    path.write_text("a" + ".a" * 101 + " = 1\n")
    with pytest.raises(InputFileError, match="nested deeper than 100"):
        kit.load_toml_file(path)


@pytest.mark.parametrize("text", ["x = inf", "x = +inf", "x = -inf", "x = nan", "x = [1e999]"])
def test_toml_numbers_must_be_finite(tmp_path, text):
    path = tmp_path / "db.toml"
    path.write_text(text + "\n")
    with pytest.raises(InputFileError, match=r"db.toml: the number .* is not finite"):
        kit.load_toml_file(path)


@pytest.mark.parametrize("text", ['{"x": Infinity}', "[-Infinity]", "[NaN]", "[1e999]", "[-1E400]"])
def test_json_numbers_must_be_finite_unless_shiftbox_wrote_them(text):
    with pytest.raises(InputFileError, match=r"f.json: the number .* is not finite"):
        kit.loads_json(text, "f.json")
    assert kit.loads_json("[NaN]", "a line", finite=False)[0] != 0  # NaN, as json.dumps writes it


def test_errors_name_the_file(tmp_path):
    with pytest.raises(InputFileError, match=r"nope.json: cannot read the file"):
        kit.load_json_file(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("[1,")
    with pytest.raises(InputFileError, match=r"bad.json: not JSON \(line 1, column 4"):
        kit.load_json_file(tmp_path / "bad.json")
    (tmp_path / "bad.toml").write_text("a = ")
    with pytest.raises(InputFileError, match=r"bad.toml: not TOML"):
        kit.load_toml_file(tmp_path / "bad.toml")
    (tmp_path / "latin1.json").write_bytes(b'["\xe9"]')
    with pytest.raises(InputFileError, match=r"latin1.json: not UTF-8"):
        kit.load_json_file(tmp_path / "latin1.json")


def test_an_empty_database_is_refused_and_one_record_is_enough():
    with pytest.raises(InputFileError, match=r"db.toml: an empty database \(no records in accounts, customers\)"):
        kit.check_not_empty("db.toml", {"customers": [], "accounts": []})
    kit.check_not_empty("db.toml", {"customers": [{"customer_id": "c"}], "accounts": []})


def test_the_reference_databases_are_within_the_bounds():
    kit.load_toml_file(require_acb("banking", "db.toml"))
    kit.load_json_file(require_acb("retail", "db.json"))

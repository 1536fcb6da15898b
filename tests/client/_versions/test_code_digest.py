"""The installed code's digest, which names the Ray actors kept for the next runs (issue 34): any change to the
Python source, in bytes or in file names, gives another digest; other files do not count."""

from __future__ import annotations

from shiftbox._versions import code_digest


def test_the_code_digest_changes_with_any_byte_or_file_name_of_the_code(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    (package / "notes.txt").write_text("not code")
    first = code_digest({"pkg": package})
    assert len(first) == 64 and first == code_digest({"pkg": package})
    (package / "notes.txt").write_text("other")  # not Python source: the same code
    assert code_digest({"pkg": package}) == first
    (package / "sub" / "b.py").write_text("y = 3\n")
    changed = code_digest({"pkg": package})
    assert changed != first
    (package / "sub" / "b.py").rename(package / "sub" / "c.py")  # same bytes, another module
    assert code_digest({"pkg": package}) not in (first, changed)
    assert code_digest({"other": package}) != code_digest({"pkg": package})


"""Finding the reference's files in a local clone of its repository: AgentChangeBench
(github.com/calissaman/AgentChangeBench) and tau2-bench (github.com/sierra-research/tau2-bench) both keep a
domain's data in data/tau2/domains/<domain>/ (db.json or db.toml, tasks*.json, policy.md, user_policy.md,
user_personas.json). The import commands take such a clone, that folder, a domain's folder, or the file itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

CLONE_DOMAINS = Path("data", "tau2", "domains")
"""Where a clone of either reference repository keeps its domains' data."""
DB_FILES = ("db.toml", "db.json")
TASK_SETS: dict[str, tuple[str, ...]] = {"original": ("tasks.json",), "new": ("tasks-new.json", "tasks_new.json")}
"""A domain's task lists by set: the paper's `original` ones (tasks.json) and AgentChangeBench's `new`
systematic sets, which retail spells tasks-new.json and airline tasks_new.json."""
TaskSet = Literal["original", "new"]


def reference_db_file(path: Path, domain: str) -> Path:
    """The domain's database file at `path`: the file itself, or db.toml / db.json in a clone (see the module)."""
    return _find(Path(path), domain, DB_FILES, "database")


def reference_task_list(path: Path, domain: str | None, task_set: TaskSet = "original") -> Path:
    """The domain's task list of `task_set` at `path`: the file itself, or found in a clone (see the module)."""
    path = Path(path)
    if path.is_dir() and domain is None:
        raise ValueError(f"{path} is a folder: pass the domain (--domain banking, retail or airline) to pick its "
                         "task list, or the task list file itself")
    return _find(path, domain or "", TASK_SETS[task_set], f"{task_set} task list")


def _find(path: Path, domain: str, names: tuple[str, ...], what: str) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise ValueError(f"{path} does not exist\n  fix: pass a local clone of the reference repository (git clone "
                         "https://github.com/calissaman/AgentChangeBench) or the file itself")
    folders = [path / CLONE_DOMAINS / domain, path / domain] + ([path] if path.name == domain else [])
    for folder in folders:
        for name in names:
            if (folder / name).is_file():
                return folder / name
    looked = ", ".join(str(folder / name) for folder in folders for name in names)
    raise ValueError(f"no {domain} {what} ({' or '.join(names)}) under {path}: looked for {looked}\n  fix: pass "
                     f"a clone of the reference repository (its {CLONE_DOMAINS / domain} holds the domain's files), "
                     "or the file itself")

"""mmtb: Multi-Mission Tool Bench's records, imported (`shiftbox tasks import-mmtb`): each record's tools,
served with the record's JSON schemas, answer each call with the observation MMTB's annotators recorded for the
matching gold call (a call no annotation covers is a tool error). The tools come with the snapshot the import
writes; its native snapshot is the small example file beside this module (`example.jsonl`, written for shiftbox), and it
has no missions (its tasks are imported, not generated)."""

from pathlib import Path

from shiftbox_servers.kit import Domain, SnapshotManifest, ToolSet, deferred

from ._schema import SNAPSHOT_VERSION
from ._tools import snapshot_tools

EXAMPLE_FILE = Path(__file__).with_name("example.jsonl")
"""One record in MMTB's format (single, clarify and chat missions), the native snapshot's source."""


def build_native(directory: Path) -> SnapshotManifest:
    """The native snapshot: the example file, imported."""
    return deferred("shiftbox_servers.mmtb._import", "import_mmtb_snapshot")(EXAMPLE_FILE, directory)


DOMAIN = Domain(
    name="mmtb",
    tools=ToolSet(),
    policy=(Path(__file__).with_name("policy.md")).read_text(),
    goal_tools={},
    snapshot_version=SNAPSHOT_VERSION,
    build_snapshot=build_native,
    importers={"mmtb": deferred("shiftbox_servers.mmtb._import", "import_mmtb_snapshot")},
    task_importers={"mmtb": deferred("shiftbox_servers.mmtb._import", "import_mmtb")},
    snapshot_tools=snapshot_tools,
)

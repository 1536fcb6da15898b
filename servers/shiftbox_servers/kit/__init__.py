"""What every shiftbox domain server shares: tools, episodes, snapshots, errors, the server factory.

The names that need the MCP SDK (its transports: stdio, HTTP) load with it on first use (`_SDK_EXPORTS`), so the
kit's core (and the in-process session, `DirectSession`) never imports the SDK."""

from .._lazy import lazy_exports
from ._calculate import CALCULATE_CONDITIONS, evaluate_arithmetic
from ._contract import (
    ToolContract,
    describe_changes,
    published_contract,
    tool_contract,
)
from ._cross import (
    NAMESPACE_SEPARATOR,
    combined_state_digest,
    domain_list,
    domain_of,
    is_cross_domain,
    namespaced,
    split_namespaced,
)
from ._direct import DirectSession
from ._domain import (
    DEFAULT_TOOLSET,
    POLICY_PROMPT,
    DeferredToolSets,
    Domain,
    deferred,
    domain_names,
    get_domain,
    installed_entry_points,
    registered_domains,
    snapshots_root,
    task_domains,
)
from ._episode import (
    CLOSE_META_KEY,
    DEFAULT_EPISODE,
    EPISODE_META_KEY,
    EPISODE_SCOPE_KEY,
    Episode,
    EpisodeStore,
)
from ._errors import (
    ERROR_META_KEY,
    Conflict,
    ErrorKind,
    FailedCall,
    InvalidArguments,
    NotFound,
    PreconditionFailed,
    error_result,
    error_wire,
    failed_result,
    result_error,
)
from ._graph import (
    DependencyGraph,
    Step,
    ToolConditions,
    conditions,
    dependency_graph,
    graph_density,
    is_graph_refusal,
)
from ._http import collect_less
from ._input_files import (
    MAX_INPUT_DEPTH,
    InputFileError,
    check_not_empty,
    json_depth,
    load_json_file,
    load_toml_file,
    loads_json,
    read_input_text,
    text_lines,
)
from ._missions import (
    ACTION_TYPES,
    Fact,
    FactBuilder,
    FactUse,
    Given,
    ImportedTask,
    Mission,
    MissionBuilder,
    MissionCall,
    MissionSet,
    Subject,
    mission,
    mission_call,
)
from ._open import open_server
from ._reference import reference_calculate, reference_result
from ._schema import DomainSchema
from ._server import (
    DEPENDENCY_GRAPH_MARK,
    GRAPH_REFUSAL_MARK,
    POLICY_URI,
    READ_THE_POLICY,
    SERVER_VERSION,
    SNAPSHOT_URI,
    STATE_DIFF_URI,
    STATE_DIGEST_URI,
    DomainServer,
)
from ._snapshot import (
    Snapshot,
    SnapshotError,
    SnapshotManifest,
    content_hash,
    new_database,
    row_counts,
    select_rows,
    write_snapshot,
)
from ._spawn import die_with_parent, free_port, http_server_process
from ._stamp import stamp_tool_contracts
from ._tools import (
    ToolHints,
    ToolSet,
    ToolSpec,
    escape_lone_surrogates,
    not_unicode_error,
    schema_arguments_model,
)
from ._transfer import (
    TRANSFER_TOOL,
    Transfer,
    add_transfer_tool,
    record_transfer,
    transfer_conditions,
)
from ._types import NOT_BLANK, IsoDate, IsoDateOrDateTime, identifier, money, round_money, text

__all__ = [
    "DeferredToolSets", "installed_entry_points",
    "MAX_INPUT_DEPTH", "InputFileError", "check_not_empty", "json_depth", "load_json_file", "load_toml_file",
    "loads_json", "read_input_text", "text_lines",
    "EPISODE_SCOPE_KEY",
    "CLOSE_META_KEY", "NOT_BLANK", "DEFAULT_EPISODE", "DEFAULT_TOOLSET", "ERROR_META_KEY", "EPISODE_META_KEY", "POLICY_PROMPT", "POLICY_URI",
    "READ_THE_POLICY", "SERVER_VERSION", "SNAPSHOT_URI",
    "STATE_DIFF_URI", "STATE_DIGEST_URI", "SessionCalls", "Conflict", "DirectSession", "Domain", "DomainServer",
    "Episode", "EpisodePathRouter", "EpisodeStore", "ErrorKind", "InvalidArguments",
    "NotFound", "PreconditionFailed", "Snapshot", "SnapshotError", "SnapshotManifest", "ToolSet",
    "ToolHints", "ToolSpec", "schema_arguments_model", "IsoDate", "IsoDateOrDateTime", "identifier", "money", "round_money", "text", "connection_episode_id", "content_hash", "domain_names", "error_result", "error_wire", "FailedCall", "escape_lone_surrogates", "not_unicode_error", "evaluate_arithmetic", "failed_result", "get_domain", "die_with_parent", "free_port", "http_server_process", "Mission", "mission", "mission_call", "meta_episode_id", "new_database", "open_server",
    "registered_domains", "result_error", "row_counts", "snapshots_root", "task_domains", "write_snapshot",
    "ToolContract", "describe_changes", "published_contract", "stamp_tool_contracts", "tool_contract",
    "NAMESPACE_SEPARATOR", "combined_state_digest", "domain_list", "domain_of",
    "is_cross_domain", "namespaced", "split_namespaced",
    "GRAPH_REFUSAL_MARK", "ToolConditions", "conditions", "graph_density",
    "DEPENDENCY_GRAPH_MARK", "DependencyGraph", "Step",
    "dependency_graph", "is_graph_refusal",
    "ACTION_TYPES", "Fact", "FactBuilder", "FactUse", "Given", "ImportedTask", "MissionBuilder", "MissionCall", "MissionSet", "Subject", "TRANSFER_TOOL", "Transfer", "add_transfer_tool", "DomainSchema", "deferred", "select_rows",
    "record_transfer", "reference_calculate", "reference_result", "serve_stdio", "CALCULATE_CONDITIONS", "collect_less",
    "transfer_conditions",
]

_SDK_EXPORTS = {"SessionCalls": "._http_calls", "EpisodePathRouter": "._binding", "connection_episode_id": "._binding",
                "meta_episode_id": "._binding", "serve_stdio": "._stdio"}
"""The exports that need the MCP SDK (name -> its module): imported on first use (PEP 562)."""

__getattr__, __dir__ = lazy_exports(__name__, _SDK_EXPORTS)

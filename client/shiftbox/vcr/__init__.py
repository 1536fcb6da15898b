"""HTTP-level LLM cassettes with vcrpy (the `vcr` extra: `pip install 'shiftbox[vcr]'`), for the LLM calls shiftbox's
boundary cannot see: an external agent's own calls (openai, httpx, requests) in its author's CI.

    with shiftbox.vcr.use_cassette("tests/cassettes/my_agent.yaml", record_mode="once"):
        run_my_agent()                       # in-process agent code: its HTTP calls are recorded, then replayed

    SHIFTBOX_VCR_CASSETTE=tests/cassettes/my_agent.yaml python -m shiftbox.vcr agent.py --model gpt-4o-mini
                                         # an agent program (a `cmd:` agent) loads the cassette at start-up

Cassettes are vcrpy's own YAML, matched on method, path and body (not host or port: the endpoint may differ between
recording and replay), with credential headers and query parameters filtered out before anything is written. The
pytest plugin's `shiftbox_vcr` fixture wraps a test in one (docs/vcr.md). vcrpy is imported only when a cassette is
used, so `import shiftbox` never needs it.
"""

from ._cassettes import (
    CASSETTE_ENV,
    CREDENTIAL_HEADERS,
    INSTALL_VCR,
    MATCH_ON,
    RECORD_MODE_ENV,
    RECORD_MODES,
    default_record_mode,
    import_vcr,
    load_vcr_cassette,
    make_vcr,
    use_cassette,
    vcr_installed,
)
from ._pytest import AgentCassette

__all__ = ["AgentCassette", "CASSETTE_ENV", "CREDENTIAL_HEADERS", "INSTALL_VCR", "MATCH_ON", "RECORD_MODES", "RECORD_MODE_ENV",
           "default_record_mode", "import_vcr", "load_vcr_cassette", "make_vcr", "use_cassette", "vcr_installed"]

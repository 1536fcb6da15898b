"""vcrpy configured for LLM traffic: credentials filtered, requests matched on method, path and body."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from shiftbox_servers.kit import loads_json

from .._cassette_file import check_cassette_file
from .._extras import extra_installed, import_extra, install_command
from ..errors import CassetteFileError
from ..redact import is_credential_key, redact, redact_text

INSTALL_VCR = install_command("vcr")
CASSETTE_ENV = "SHIFTBOX_VCR_CASSETTE"
"""The cassette an agent program run as `python -m shiftbox.vcr PROGRAM` records into or replays from."""
RECORD_MODE_ENV = "SHIFTBOX_RECORD_MODE"
"""vcrpy's record mode when none is given: `none` replays only (CI), `once` records a missing cassette."""
RECORD_MODES = ("none", "once", "new_episodes", "all")
MATCH_ON = ("method", "path", "llm_body")
"""Not scheme, host or port: a local server's port (or the api_base) may differ between recording and replay.
`llm_body` is vcrpy's `body` matcher without its diff of every recorded request that does not match."""
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key",
                      "openai-organization", "openai-project", "anthropic-api-key", "cookie", "set-cookie")
"""Headers never written to a cassette (request and response), besides any whose name names a credential
(`shiftbox.redact.is_credential_key`: `x-my-token`, …)."""
CONVERSATION_FIELDS = ("messages", "tools", "system", "input", "contents")
"""Fields of an LLM request body that hold the conversation, kept as sent; every other field (the request's
parameters, `extra_body`, `extra_query`) is redacted (`shiftbox.redact`) before it is written or matched."""


def vcr_installed() -> bool:
    """Whether the extra is installed (without importing vcrpy)."""
    return extra_installed("vcr")


def import_vcr() -> ModuleType:
    """The vcr module (raises ImportError naming `INSTALL_VCR` without the extra)."""
    return import_extra("vcr", "vcr", "vcrpy cassettes")


def default_record_mode() -> str:
    """`SHIFTBOX_RECORD_MODE` when set; else `none` under CI (the `CI` variable set), where nothing may reach a
    provider, and `once` elsewhere (a missing cassette is recorded, an existing one replayed)."""
    mode = os.environ.get(RECORD_MODE_ENV)
    if mode:
        return checked_record_mode(mode)
    ci = os.environ.get("CI", "").strip().lower()
    return "none" if ci not in ("", "0", "false", "no") else "once"


def checked_record_mode(mode: str) -> str:
    if mode not in RECORD_MODES:
        raise ValueError(f"record mode {mode!r}: use one of {', '.join(RECORD_MODES)}")
    return mode


def is_credential_header(name: str) -> bool:
    return name.lower() in CREDENTIAL_HEADERS or is_credential_key(name)


def body_without_credentials(body: bytes | str | None) -> bytes | str | None:
    """A JSON request body with its parameters redacted (`api_key`, `password`, … in `extra_body`); the
    conversation (`CONVERSATION_FIELDS`) and any other body as they are."""
    try:
        parsed = loads_json(body, "a request body", finite=False) if body else None
    except (TypeError, ValueError):
        return body
    if not isinstance(parsed, dict):
        return body
    cleaned = {k: v if k in CONVERSATION_FIELDS else redact({k: v})[k] for k, v in parsed.items()}
    return body if cleaned == parsed else json.dumps(cleaned, separators=(",", ":"))


def request_without_credentials(request: Any) -> Any:
    """A vcrpy request (already a copy) as it is written and matched: no credential headers, the URL's
    user:password and credential query parameters redacted, the JSON body's parameters redacted."""
    for name in [n for n in request.headers if is_credential_header(n)]:
        del request.headers[name]
    request.uri = redact_text(request.uri)
    if not hasattr(request.body, "read") and not hasattr(request.body, "__next__"):  # file or iterator: left alone
        request.body = body_without_credentials(request.body)
    return request


def response_without_credentials(response: dict[str, Any]) -> dict[str, Any]:
    """A recorded response without credential headers (OpenAI answers with `openai-organization`, cookies)."""
    headers = response.get("headers") or {}
    response["headers"] = {name: value for name, value in headers.items() if not is_credential_header(name)}
    return response


@functools.lru_cache(maxsize=1024)
def _json_of(body: bytes) -> Any:
    return loads_json(body, "a request body", finite=False)


def llm_body(new: Any, recorded: Any) -> None:
    """vcrpy's `body` matcher for LLM requests: the same bytes, or the same JSON (keys in any order); any other body
    goes to vcrpy's own matcher. vcrpy's own, for JSON, writes a diff of each recorded request a request does not
    match, every time it looks for one: 98% of a replay's CPU time (docs/replay.md)."""
    from vcr.matchers import body

    if new.body == recorded.body:
        return
    try:
        same = _json_of(bytes(new.body)) == _json_of(bytes(recorded.body))
    except (TypeError, ValueError):
        return body(new, recorded)
    if not same:
        raise AssertionError("the JSON bodies differ")
    return None


def make_vcr(record_mode: str | None = None) -> Any:
    """A `vcr.VCR` recording LLM traffic safely: `record_mode` (default `default_record_mode()`), `MATCH_ON`,
    credentials redacted (`request_without_credentials`), compressed responses stored decoded (readable YAML)."""
    vcr = import_vcr()
    configured = vcr.VCR(record_mode=checked_record_mode(record_mode or default_record_mode()), match_on=MATCH_ON,
                         filter_headers=CREDENTIAL_HEADERS,
                         before_record_request=request_without_credentials,
                         before_record_response=response_without_credentials, decode_compressed_response=True)
    configured.register_matcher("llm_body", llm_body)
    return configured


def use_cassette(path: str | Path, record_mode: str | None = None, **options: Any) -> Any:
    """vcrpy's `use_cassette` (a context manager and decorator) for the cassette at `path`, configured by
    `make_vcr`; `options` are vcrpy's own (`allow_playback_repeats`, …). An existing cassette over a limit (size,
    nesting, YAML tags) is refused first: CassetteFileError."""
    vcr = make_vcr(record_mode)
    if Path(path).exists():
        check_cassette_file(Path(path), yaml=options.get("serializer", vcr.serializer) == "yaml")
        load_vcr_cassette(vcr.get_merged_config(path=os.fspath(path), **options))  # its shape, before the program runs
    return vcr.use_cassette(os.fspath(path), **options)


def load_vcr_cassette(config: dict[str, Any]) -> Any:
    """vcrpy's `Cassette` loaded with `config` (`VCR.get_merged_config`), or CassetteFileError naming the file when
    vcrpy cannot read its shape (a torn or hand-edited cassette)."""
    from vcr.cassette import Cassette

    try:
        return Cassette.load(**{k: v for k, v in config.items() if k in VCR_CASSETTE_ARGUMENTS})
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # vcrpy's reading of a cassette's shape
        raise CassetteFileError(f"cassette {config['path']}: not a vcrpy cassette ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:300]}); record it again") from None


VCR_CASSETTE_ARGUMENTS = frozenset({"path", "serializer", "persister", "record_mode", "match_on",
                                    "before_record_request", "before_record_response", "custom_patches", "inject",
                                    "allow_playback_repeats", "drop_unused_requests", "filter_sensitive_data",
                                    "before_save_interaction", "after_load_interaction", "skip_patchers"})
"""What of `VCR.get_merged_config` a vcrpy `Cassette` takes (the rest configures its context manager)."""

"""The one redaction of credentials, applied wherever options or requests are recorded.

`redact(value)` returns a copy of `value` (options, request parameters, a message) with credentials
replaced by `[redacted]`:

- the value of any key naming a credential (`Authorization`, `api_key`, `x-api-key`, `token`,
  `secret`, `password`, `cookie`, …; not `api_key_env`, which names a variable, not a key), and every
  value under a key naming headers (`extra.extra_headers`, `headers`): header values are connection
  details, never results;
- in strings: the user:password of a URL (`https://alice:pw@host` → `https://%5Bredacted%5D@host`), query
  parameters naming a credential (`?key=…`, `&api_key=…`, `&sig=…`), `Bearer …` tokens, and in a command
  line (`cmd:"…"`) the value of an option or an assignment naming one (`--api-key sk-…`, `--token=…`,
  `OPENAI_API_KEY=sk-…`);
- strings holding JSON (`--agent-arg extra.extra_headers={"Authorization": …}`) are redacted inside.

It is idempotent, so a recorded (redacted) configuration compares equal to the redaction of the one
given again (`run --resume`), and a replay compares recorded requests with redacted live ones.
Used by run.json and fixture.json (`RunConfig`), LLM cassettes (`shiftbox.llm.Cassette`) and LLM error
messages (which may quote an api_base).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from shiftbox_servers.kit import loads_json

REDACTED = "[redacted]"
URL_REDACTED = "%5Bredacted%5D"
"""`[redacted]` as a URL's user name: `https://[redacted]@host` would not parse (an invalid IPv6 host), so a replay
over HTTP could not call the recorded api_base."""
_CREDENTIAL_WORDS = frozenset({
    "authorization", "auth", "key", "apikey", "token", "secret", "password", "passwd", "pwd", "cookie",
    "credential", "credentials", "signature", "sig", "bearer", "session",
})
_QUERY_WORDS = _CREDENTIAL_WORDS | {"code", "access", "refresh"}
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]+)@")
_QUERY_PARAM = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&#;?\s]+)=(?P<value>[^&#;\s]*)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{4,}")
_OPTION = re.compile(r"(?<!\S)(?P<name>--?[A-Za-z][\w.-]*)(?P<sep>=|\s+)(?P<value>(?!-)\S+)")
_ASSIGNMENT = re.compile(r"(?<!\S)(?P<name>[A-Za-z_][\w.]*)(?P<sep>=)(?P<value>\S+)")


_WORD_SEPARATORS = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=4096)
def _words(key: str) -> tuple[str, ...]:
    """The words of a key, once a process: every request a replay matches is redacted, with the same few keys."""
    return tuple(w for w in _WORD_SEPARATORS.split(key.lower()) if w)


def is_credential_key(key: str, words: frozenset[str] = _CREDENTIAL_WORDS) -> bool:
    """A key whose value is a credential: `Authorization`, `x-api-key`, `api_key`, `token` (not `api_key_env`,
    `max_tokens`)."""
    parts = _words(key)
    if not parts or parts[-1] == "env":  # names an environment variable, holds no secret
        return False
    return any(p in words for p in parts)


def _is_headers_key(key: str) -> bool:
    return any(p in ("headers", "header") for p in _words(key))


def redact_text(text: str) -> str:
    """Credentials inside one string: URL user:password, credential query parameters, bearer tokens."""
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{URL_REDACTED}@", text)
    text = _QUERY_PARAM.sub(lambda m: f"{m['sep']}{m['name']}={REDACTED}"
                            if is_credential_key(m["name"], _QUERY_WORDS) and m["value"] else m[0], text)
    text = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", text)
    for pattern in (_OPTION, _ASSIGNMENT):
        text = pattern.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}" if is_credential_key(m["name"]) else m[0],
                           text)
    return text


def _json_container(text: str) -> dict | list | None:
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return None
    try:
        parsed = loads_json(stripped, "a text", finite=False)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _everything(value: Any) -> Any:
    """Every leaf of `value` redacted (the value of a credential key, or of a headers key)."""
    if isinstance(value, dict):
        return {k: _everything(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_everything(v) for v in value]
    if isinstance(value, str):
        parsed = _json_container(value)
        if parsed is not None:
            cleaned = _everything(parsed)
            return value if cleaned == parsed else json.dumps(cleaned)
    return value if value in (None, "", REDACTED) else REDACTED


def redact(value: Any) -> Any:
    """A copy of `value` with every credential replaced by `[redacted]` (see the module docstring)."""
    if isinstance(value, dict):
        return {k: _everything(v) if is_credential_key(str(k)) or _is_headers_key(str(k)) else redact(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        parsed = _json_container(value)
        if parsed is not None:
            cleaned = redact(parsed)
            return value if cleaned == parsed else json.dumps(cleaned)
        return redact_text(value)
    return value

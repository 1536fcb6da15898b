"""litellm's local price map, read without importing litellm: which models it knows (and so prices).

The map is a JSON file inside the litellm package (`model_prices_and_context_window_backup.json`, what
`LITELLM_LOCAL_MODEL_COST_MAP=True` makes litellm use), found with `importlib.util.find_spec`, so a run whose
models the map does not know (a local or fake model on the fast path) learns that without paying litellm's
import. Once litellm is imported (another role took its path), its live map is asked instead: a model
registered with `litellm.register_model` counts there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"


def _price_map_file() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed: shiftbox needs it (reinstall shiftbox)")
    return Path(next(iter(spec.submodule_search_locations))) / PRICE_MAP_FILE


@functools.cache
def local_price_map() -> dict[str, Any]:
    """litellm's bundled price map, keyed by model name (as litellm's `model_cost` is before any change)."""
    return json.loads(_price_map_file().read_text(encoding="utf-8"))


def names_of(model: str) -> set[str]:
    """The names a price map could know `model` ("provider/name") by: as given, without its provider, its last
    part, each also lowercased."""
    names = {model, model.partition("/")[2] or model, model.rsplit("/", 1)[-1]}
    return names | {name.lower() for name in names}


def known_model(model: str) -> bool:
    """Whether litellm's price map knows the model under any of its names: then litellm may price it, and may
    treat its requests and responses specially (a catalog model); an unknown model is priced 0.0."""
    model_cost = getattr(sys.modules.get("litellm"), "model_cost", None)
    if isinstance(model_cost, dict):
        return any(name in model_cost for name in names_of(model))
    return _known_locally(model)


@functools.cache
def _known_locally(model: str) -> bool:
    """`known_model` by the bundled map. Parsing it (3.5 MB) costs tens of ms of CPU before a run's first request;
    when its text holds none of the model's names as a JSON string (a local or fake model), no key can be one of
    them, and it is not parsed. That holds when the file uses no `\\u` or `\\/` escape: then a string has one
    spelling, `json.dumps(name, ensure_ascii=False)`."""
    names = names_of(model)
    text = _price_map_file().read_bytes()  # UTF-8, as JSON files are
    spellings = [json.dumps(name, ensure_ascii=False).encode() for name in names]
    if b"\\u" not in text and b"\\/" not in text and not any(spelling in text for spelling in spellings):
        return False
    return any(name in local_price_map() for name in names)

"""AgentChangeBench's own user texts, read from a local copy of its repository (`protocol=agentchangebench`).

shiftbox ships no text of the reference: a paper replication points the LLM user at a checkout of the
AgentChangeBench repository (`reference=DIR`), and the user policy (`user_policy.md`) and persona
descriptions (`user_personas.json`) of the task's domain are read from there, verbatim. Two layouts are
accepted: the repository's own (`DIR/data/tau2/domains/<domain>/`) and a flat copy (`DIR/<domain>/`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from shiftbox_servers.kit import load_json_file

POLICY_FILE = "user_policy.md"
PERSONAS_FILE = "user_personas.json"
LAYOUTS = ("data/tau2/domains/{domain}", "{domain}")


@dataclass(frozen=True)
class ReferenceTexts:
    """One domain's user policy and persona descriptions, as the reference repository has them."""

    policy: str
    personas: dict[str, str]
    folder: Path

    def persona(self, key: str | None) -> str:
        if key is None:
            return ""
        if key not in self.personas:
            raise ValueError(f"persona {key!r} is not described in {self.folder / PERSONAS_FILE} (it has "
                             f"{', '.join(sorted(self.personas))}); use the default protocol=reference for "
                             "shiftbox's own personas")
        return self.personas[key]

    def sha256(self) -> str:
        """Digest of the texts used (policy and personas), recorded in the simulator's identity."""
        blob = json.dumps({"policy": self.policy, "personas": self.personas}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


def check_reference_dir(reference: str | None) -> Path:
    """The reference repository folder named by the `reference` option, or ValueError naming the fix."""
    if not reference:
        raise ValueError("protocol=agentchangebench reads AgentChangeBench's own user policy and personas: give "
                         "the folder of a local copy of its repository with reference=DIR (it holds "
                         "data/tau2/domains/<domain>/user_policy.md and user_personas.json)")
    folder = Path(reference).expanduser()
    if not folder.is_dir():
        raise ValueError(f"reference={reference}: no such folder; give a local copy of the AgentChangeBench "
                         "repository")
    return folder


def load_reference_texts(folder: Path, domain: str) -> ReferenceTexts:
    """The domain's texts from the reference repository at `folder`; ValueError naming what is missing."""
    tried = [folder / layout.format(domain=domain) for layout in LAYOUTS]
    for place in tried:
        policy, personas = place / POLICY_FILE, place / PERSONAS_FILE
        if policy.is_file() and personas.is_file():
            described = load_json_file(personas)
            if not isinstance(described, dict) or not all(isinstance(v, str) for v in described.values()):
                raise ValueError(f"{personas} must map persona keys to description texts")
            return ReferenceTexts(policy=policy.read_text(encoding="utf-8"), personas=described, folder=place)
    raise ValueError(f"no {POLICY_FILE} and {PERSONAS_FILE} for domain {domain!r} in the reference folder; looked "
                     f"in {', '.join(str(p) for p in tried)}")

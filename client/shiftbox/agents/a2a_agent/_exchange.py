"""One A2A exchange: what the agent's answer to one user message says, read from the stream of its events.

The reply is the text of a returned `Message`, or of a task's new artifacts followed by its final status
message. A status update while the task is still working, with text, is narration (shown with the next
tool call). How the task ended decides the rest: completed and input-required (the agent waits for the
user) end the turn normally; rejected (the agent declined) ends the simulation as the agent's error,
scored; failed, canceled, auth-required, or an answer that ends while the task is under way, mean the
agent did not run (`ExternalAgentError`: not scored).
"""

from __future__ import annotations

from typing import Any

from ...errors import ShiftboxError
from .._gateway_agent import ExternalAgentError, Said

_STATE_NAMES = {
    "TASK_STATE_COMPLETED": "completed", "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_FAILED": "failed", "TASK_STATE_REJECTED": "rejected", "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_AUTH_REQUIRED": "auth-required", "TASK_STATE_WORKING": "working",
    "TASK_STATE_SUBMITTED": "submitted", "TASK_STATE_UNSPECIFIED": "unspecified",
}
_REPLY_STATES = {"completed", "input-required"}
_UNDER_WAY = {"working", "submitted"}


class A2ATaskRejected(ShiftboxError):
    """The A2A agent declined the task (state rejected): its own answer, so the simulation ends as `agent_error`
    and is scored."""


def _text(parts: Any) -> str:
    from a2a.helpers import get_text_parts

    return "\n".join(get_text_parts(parts))


class Exchange:
    """Reads the events of one `send_message` call (a2a-sdk `StreamResponse`s) into agent events."""

    def __init__(self, seen_artifacts: set[str]):
        self.seen = seen_artifacts  # artifact ids of earlier exchanges of this conversation (shared)
        self.artifacts: dict[str, str] = {}
        self.status_text = ""
        self.state: str | None = None  # a task state name, or "message"
        self.reply: str | None = None
        self.task_id = ""

    def absorb(self, response: Any) -> list[Said]:
        """Take one event in; return the narration it carries, if any."""
        if response.HasField("message"):
            self.state, self.reply = "message", _text(response.message.parts)
            return []
        if response.HasField("task"):
            task = response.task
            self.task_id = task.id
            for artifact in task.artifacts:
                if artifact.artifact_id not in self.seen:
                    self._artifact(artifact.artifact_id, _text(artifact.parts), append=False)
            return self._status(task.status)
        if response.HasField("status_update"):
            self.task_id = response.status_update.task_id or self.task_id
            return self._status(response.status_update.status)
        if response.HasField("artifact_update"):
            update = response.artifact_update
            self._artifact(update.artifact.artifact_id, _text(update.artifact.parts), append=update.append)
        return []

    def _artifact(self, artifact_id: str, text: str, *, append: bool) -> None:
        self.seen.add(artifact_id)
        self.artifacts[artifact_id] = (self.artifacts.get(artifact_id, "") if append else "") + text

    def _status(self, status: Any) -> list[Said]:
        from a2a.types import TaskState

        self.state = _STATE_NAMES.get(TaskState.Name(status.state), "unspecified")
        text = _text(status.message.parts) if status.HasField("message") else ""
        if self.state in _UNDER_WAY:
            return [{"content": text, "final": False}] if text else []
        self.status_text = text or self.status_text
        return []

    @property
    def waits_for_input(self) -> bool:
        """The task stays open for the user's next message (input-required): send that with its task id."""
        return self.state == "input-required"

    def outcome(self, url: str) -> Said | ExternalAgentError | A2ATaskRejected:
        """The final reply of this exchange, or why there is none."""
        if self.state == "message":
            return {"content": self.reply or "", "final": True}
        texts = [t for t in self.artifacts.values() if t]
        if self.status_text and self.status_text not in texts:
            texts.append(self.status_text)
        if self.state in _REPLY_STATES:
            return {"content": "\n".join(texts), "final": True}
        said = f": {' '.join(texts)[:500]}" if texts else ""
        if self.state == "auth-required":
            return ExternalAgentError(f"the A2A agent at {url} asks for authentication (task state auth-required), "
                                      f"which shiftbox cannot give{said}")
        if self.state in _UNDER_WAY or self.state in (None, "unspecified"):
            return ExternalAgentError(f"the A2A agent at {url} ended its answer while the task was still "
                                      f"{self.state or 'not started'} (no reply)")
        if self.state == "rejected":
            return A2ATaskRejected(f"the A2A agent at {url} ended the task as rejected{said}")
        return ExternalAgentError(f"the A2A agent at {url} ended the task as {self.state}{said}")

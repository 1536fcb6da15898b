"""The assessor as an A2A server: a2a-sdk's `AgentExecutor` behind its default request handler, on 127.0.0.1.

Each request is one task: rejected at once when it does not fit (`read_request`), otherwise working (a status
message per finished simulation) until the run is scored, then completed with an artifact holding the summary
(text) and `AssessmentResult` (data); a run that cannot start or fails ends the task failed, naming why.
Assessments run one at a time, each in a worker thread (the run has its own event loop).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from ..agents.a2a_agent import require_a2a
from ..errors import ShiftboxError
from ._assess import AssessorSettings, assess, next_run_dir
from ._request import BadRequest, read_request


def assessor_card(url: str) -> Any:
    """The assessor's agent card (a2a-sdk `AgentCard`): JSON-RPC at `url`, streaming."""
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    return AgentCard(
        name="shiftbox assessor", version="1.0.0",
        description="Evaluates an A2A agent on shiftbox's goal-shift customer-service tasks (TSR, TUE, TCRR, GSRT).",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["application/json", "text/plain"], default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="assess", name="Assess an agent", tags=["evaluation", "benchmark"],
                           description='Send {"participants": {"agent": URL}, "config": {...}}; the answer is the '
                                       "run's metrics.")],
    )


def _executor(settings: AssessorSettings) -> Any:
    from a2a.helpers import get_data_parts, new_data_part, new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater

    one_at_a_time = asyncio.Lock()

    class Assessor(AgentExecutor):
        async def execute(self, context: Any, event_queue: Any) -> None:
            task = context.current_task or new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)

            def say(text: str) -> Any:
                return updater.new_agent_message([new_text_part(text)])

            try:
                request = read_request(context.get_user_input(), get_data_parts(context.message.parts))
            except BadRequest as exc:
                await updater.reject(say(str(exc)))
                return
            loop = asyncio.get_running_loop()
            async with one_at_a_time:
                run_dir = next_run_dir(settings.out)
                await updater.start_work(say(f"Assessing {request.participant} into {run_dir}"))

                def done(trajectory: Any) -> None:  # from the run's thread
                    asyncio.run_coroutine_threadsafe(updater.update_status(
                        _working(), say(f"{trajectory.task_id} trial {trajectory.trial}: "
                                        f"{trajectory.termination.reason}")), loop)

                try:
                    result = await asyncio.to_thread(assess, settings, request, run_dir, done)
                except (ShiftboxError, ValueError, OSError) as exc:
                    await updater.failed(say(f"the assessment of {request.participant} failed: {exc}"))
                    return
            await updater.add_artifact([new_text_part(result.summary()), new_data_part(result.model_dump(mode="json"))],
                                       name="assessment")
            await updater.complete()

        async def cancel(self, context: Any, event_queue: Any) -> None:
            raise NotImplementedError("an assessment runs to its end")

    return Assessor()


def _working() -> Any:
    from a2a.types import TaskState

    return TaskState.TASK_STATE_WORKING


def assessor_app(url: str, settings: AssessorSettings) -> Any:
    """The assessor's ASGI app (Starlette): its card at /.well-known/agent-card.json, JSON-RPC at /."""
    require_a2a()
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from starlette.applications import Starlette

    card = assessor_card(url)
    handler = DefaultRequestHandler(agent_executor=_executor(settings), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def serve_assessor(settings: AssessorSettings, port: int, log: Callable[[str], None] = print) -> None:
    """Serve the assessor on 127.0.0.1:PORT (0: a free port) until interrupted; `log` gets its URL first."""
    from ..tasks import load_task_file

    load_task_file(settings.tasks)  # a task file that does not load is refused before serving
    require_a2a()
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))  # loopback only: the assessor runs whatever agent URL it is sent
    sock.listen(128)  # connections wait from now on: the URL logged next can be used at once
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    log(f"shiftbox assessor at {url}")
    uvicorn.Server(uvicorn.Config(assessor_app(url, settings), log_level="warning")).run(sockets=[sock])

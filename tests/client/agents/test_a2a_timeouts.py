"""Every request to an A2A agent is bounded (issue 30 item 3): an agent that accepts connections and never
answers refuses the run naming its URL (exit 2) when its card never comes, and ends the simulation as an
`agent_program_error` naming its URL when a message never gets an answer, each within bounded time."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

from google.protobuf.json_format import MessageToDict

from shiftbox.trajectory import read_trajectories
from tests.client.agents.test_a2a_agent import desk, run_a2a

CARD = "/.well-known/agent-card.json"


@contextlib.contextmanager
def silent_agent(*, serve_card: bool) -> Iterator[str]:
    """A 127.0.0.1 server that accepts every connection and never answers a request (but the agent card, if
    `serve_card`): what a hung agent looks like to shiftbox. Yields its URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    card = json.dumps(MessageToDict(desk.agent_card(url))).encode()
    held: list[socket.socket] = []
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(5)
            request = conn.recv(65536)
            if serve_card and request.split(b" ", 2)[1:2] == [CARD.encode()]:
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(card)).encode() + b"\r\nconnection: close\r\n\r\n" + card)
                conn.close()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        stop.set()
        thread.join(5)
        for conn in [*held, listener]:
            conn.close()


def test_a_card_that_never_answers_refuses_the_run_naming_the_url(tmp_path):
    with silent_agent(serve_card=False) as url:
        start = time.monotonic()
        res = run_a2a(tmp_path / "r", url, "--task-id", "a2a_banking_001")
        took = time.monotonic() - start
    assert res.exit_code == 2, res.output
    assert f"the A2A agent at {url} did not serve its agent card within" in " ".join(res.output.split())
    assert took < 30 and not (tmp_path / "r").exists()


def test_without_preflight_a_card_that_never_answers_ends_the_simulation_naming_the_url(tmp_path, monkeypatch):
    monkeypatch.setattr("shiftbox.agents.a2a_agent._agent.CARD_TIMEOUT_S", 1.0)
    with silent_agent(serve_card=False) as url:
        start = time.monotonic()
        res = run_a2a(tmp_path / "r", url, "--no-preflight", "--task-id", "a2a_banking_001")
        took = time.monotonic() - start
    assert res.exit_code == 1, res.output  # every simulation failed to run: reported, not a usage error
    [trajectory] = read_trajectories(tmp_path / "r")
    assert trajectory.termination.reason == "agent_program_error"
    assert f"the A2A agent at {url} did not serve its agent card within 1 s" in trajectory.termination.detail
    assert took < 30


def test_a_message_that_never_gets_an_answer_ends_the_simulation_naming_the_url(tmp_path):
    with silent_agent(serve_card=True) as url:
        start = time.monotonic()
        res = run_a2a(tmp_path / "r", url, "--task-id", "a2a_banking_001", "--agent-arg", "timeout=2")
        took = time.monotonic() - start
    assert res.exit_code == 1, res.output  # every simulation failed to run: reported, not a usage error
    [trajectory] = read_trajectories(tmp_path / "r")
    assert trajectory.termination.reason == "agent_program_error", trajectory.termination
    assert f"from the A2A agent at {url} within 2 s" in trajectory.termination.detail \
        or f"the A2A agent at {url} did not answer within 2 s" in trajectory.termination.detail, trajectory.termination
    assert took < 30



"""`shiftbox ray-actors stop`: end the Ray actors that runs kept on a cluster (`shiftbox run --ray-keep-actors`)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..runs import RunWorkerError, stop_kept_actors
from ._common import fail

ray_actors_app = typer.Typer(help="The Ray actors kept on a cluster by `shiftbox run --ray-keep-actors`.",
                             no_args_is_help=True)


@ray_actors_app.command("stop")
def stop(
    ray_address: Annotated[str, typer.Option(help="the Ray cluster: auto (this node's), HOST:PORT or "
                                                  "ray://HOST:10001")] = "auto",
) -> None:
    """Stop every kept actor on the cluster (any shiftbox version's), freeing its CPUs; a run using them loses the
    simulations it had in flight there, as infrastructure errors (--retry-infra, --resume run them again).

    Example: shiftbox ray-actors stop --ray-address 127.0.0.1:6379
    """
    try:
        names = stop_kept_actors(ray_address)
    except (ImportError, RunWorkerError) as exc:
        raise fail(str(exc)) from None
    except ConnectionError as exc:  # Ray's own words name its `--address`
        raise fail(f"no Ray cluster reached at {ray_address} ({exc}); give it with --ray-address HOST:PORT") from None
    typer.echo(f"stopped {len(names)} kept Ray actor{'s' * (len(names) != 1)}" + "".join(f"\n  {n}" for n in names))

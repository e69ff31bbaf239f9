"""`kdump forecast`: what a broker will do at start with these log dirs. Never writes anything."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import commits_option
from kdump.errors import KdumpError, PathError
from kdump.ops.forecast import Verdict, forecast
from kdump.render.consumers import impact_lines
from kdump.render.forecast import forecast_json_lines, forecast_lines

_EXIT = {
    Verdict.CLEAN: ExitCode.OK,
    Verdict.RECOVERS: ExitCode.FORECAST_RECOVERS,
    Verdict.LOSES: ExitCode.FORECAST_LOSES,
    Verdict.NO_START: ExitCode.FORECAST_NO_START,
}


@click.command(name="forecast")
@click.argument("log_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--metadata",
    type=click.Path(path_type=Path),
    default=None,
    help="A __cluster_metadata-0 directory (or a log dir holding one) to take the metadata from, "
    "instead of the one found in LOG_DIRS.",
)
@click.option(
    "--node-id", type=int, default=None, metavar="N", help="The broker's node.id (default: meta.properties')."
)
@click.option(
    "--kafka-version",
    default="4.4",
    metavar="VERSION",
    show_default=True,
    help="The Kafka release that will start on the log dirs.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"], case_sensitive=False),
    metavar="text|json",
    default="text",
    show_default=True,
    help="text: the short verdict; json: JSON Lines with every fact.",
)
@commits_option("LOG_DIRS", "The forecast then says which groups the start-up hurts.")
@click.option("--image", is_flag=True, help="Print the metadata image (JSON) instead of the forecast.")
def forecast_command(
    log_dirs: tuple[Path, ...],
    metadata: Path | None,
    node_id: int | None,
    kafka_version: str,
    fmt: str,
    commits_paths: tuple[str, ...],
    image: bool,
) -> None:
    """Forecast what a broker does at start with LOG_DIRS (all of one broker's log dirs).

    Exit status: 0 starts clean, 10 starts after recovery with nothing lost, 11 starts but loses or
    deletes data, 12 does not start.
    """
    for p in log_dirs:
        if not p.is_dir():
            raise PathError(f"{p} is not a directory")
    fc = forecast(log_dirs, metadata=metadata, node_id=node_id, kafka_version=kafka_version)
    if image:
        if fc.image is None:
            raise KdumpError("no __cluster_metadata-0 in the log dirs given (use --metadata PATH)")
        click.echo(json.dumps(fc.image.to_dict()))
        raise SystemExit(ExitCode.OK)
    from kdump.ops.consumers import read_commits
    from kdump.ops.forecast.consumers import groups_hurt

    commits = read_commits(commits_paths or [str(p) for p in log_dirs])
    impacts = groups_hurt(fc, commits)
    if fmt == "json":
        lines = forecast_json_lines(fc, impacts)
    else:
        lines = forecast_lines(fc, impact_lines(impacts, commits, asked=bool(commits_paths)))
    for line in lines:
        click.echo(line)
    raise SystemExit(_EXIT[fc.verdict])

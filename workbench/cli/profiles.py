"""`workbench profiles`: the experiments in profiles/ (or a folder), checked."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import one_line_errors, out
from workbench.errors import SpecError
from workbench.profile_files import profiles_dir
from workbench.spec.steps import check_spec, load_spec

app = typer.Typer(
    help="List and check the TOML experiments in profiles/.", invoke_without_command=True
)


@app.callback()
@one_line_errors
def profiles(
    ctx: typer.Context,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="where the profiles are; default: profiles/ here, else the "
            "ones shipped with the workbench",
        ),
    ] = None,
) -> None:
    """Every profile with its description and step count; broken ones with their error."""
    if ctx.invoked_subcommand is not None:
        return
    folder = folder or profiles_dir()
    files = sorted(folder.glob("*.toml"))
    if not files:
        out(f"no profiles in {folder}/")
        return
    for path in files:
        try:
            spec = load_spec(path)
            steps = len(check_spec(spec))
            out(
                f"{path}: {spec.description or spec.name} "
                f"[{spec.target.system}, {steps} step{'s' if steps != 1 else ''}]"
            )
        except SpecError as exc:
            out(f"{path}: BROKEN: {exc}")

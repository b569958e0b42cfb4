"""What `workbench compare` and `workbench run --baseline` do once their options are read:
the runs loaded (stored, or exported JSON files), compared (`workbench.report.changes`),
shown, and the regression checks judged. Loaded only when a comparison is asked for: it
brings numpy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import typer

from workbench.cli.common import out, read_store
from workbench.cli.compare_options import parse_noise
from workbench.report.change_lines import table as markdown_table
from workbench.report.change_lines import text, to_dict
from workbench.report.changes import Comparison, compare_runs, within_run
from workbench.report.json_read import looks_like_file, read_json_runs
from workbench.report.model import RunData, read_run
from workbench.report.regressions import WHERE, failures, parse_all

__all__ = ["Baseline", "comparisons_of", "judge", "load_runs", "parse_all", "read_run", "show"]
from workbench.results.store import StoredRun
from workbench.sdk.errors import SpecError


def load_runs(refs: Sequence[str], store: Path | None) -> list[StoredRun]:
    """Each reference as a run: an exported JSON file (its first run), else a stored run."""
    runs: list[StoredRun] = []
    opened = None
    for ref in refs:
        path = Path(ref)
        if looks_like_file(ref) and (path.exists() or ref.endswith(".json")):
            found = read_json_runs(path)
            if len(found) > 1:
                typer.echo(f"note: {ref} holds {len(found)} runs; comparing the first", err=True)
            runs.append(found[0])
            continue
        opened = opened or read_store(store)
        runs.append(opened.load(ref))
    return runs


def comparisons_of(base: RunData, news: Sequence[RunData], noise: float) -> list[Comparison]:
    """Each new run against the base; with no new run, the base's sweep against itself."""
    if not news:
        found = within_run(base, noise)
        if found is None:
            raise SpecError(
                f"run {base.id} sweeps nothing: give a second run to compare it with", "NEW"
            )
        return [found]
    return [compare_runs(base, new, noise) for new in news]


def show(comparisons: Sequence[Comparison], fmt: str) -> None:
    if fmt == "json":
        out(json.dumps({"comparisons": [to_dict(c) for c in comparisons]}, indent=2))
    elif fmt == "markdown":
        out("\n".join(markdown_table(comparisons, "##")).rstrip("\n"))
    else:
        out("\n".join(text(comparisons)))


def judge(checks: Sequence[str], comparisons: Sequence[Comparison]) -> bool:
    """Print each failed regression check; True when all passed."""
    failed = failures(parse_all(checks), comparisons)
    for line in failed:
        out(f"FAILED {line}")
    if checks:
        out(f"regression checks: {'failed' if failed else 'passed'} ({', '.join(checks)})")
    return not failed


@dataclass(frozen=True)
class Baseline:
    """`workbench run --baseline`: the baseline read (and every option checked) before the
    run starts, so a typo costs nothing; the new run judged against it when it ends."""

    run: RunData
    checks: tuple[str, ...]
    noise: float

    @classmethod
    def read(
        cls, ref: str | None, checks: Sequence[str], noise: str, store: Path | None
    ) -> Baseline | None:
        if ref is None:
            if checks:
                raise SpecError("goes with --baseline: what would it compare?", WHERE)
            return None
        parse_all(checks)
        (stored,) = load_runs([ref], store)
        return cls(read_run(stored), tuple(checks), parse_noise(noise))

    def judge(self, new: StoredRun) -> bool:
        """Print the comparison and the failed checks; True when every check passed."""
        comparisons = [compare_runs(self.run, read_run(new), self.noise)]
        out()
        show(comparisons, "text")
        return judge(self.checks, comparisons)

"""Files straight from a run: `--json-out`, `--csv-out`, `--hlog-out` and `--report
FORMAT[:FILE]`, written when the run ends from the stored run, by the renderers of
`workbench report` (so a file from the run and a later report are the same text)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.files.output_files import check_output, write_text
from workbench.report import FORMATS, render
from workbench.results.store import StoredRun
from workbench.sdk.errors import SpecError


@dataclass(frozen=True)
class Output:
    format: str
    path: Path | None  # None: stdout, after the summary
    option: str = "--report"  # the flag that asked for it, for an error message


def parse_report(text: str) -> Output:
    """``FORMAT`` or ``FORMAT:FILE``."""
    fmt, sep, file = text.partition(":")
    if fmt not in FORMATS:
        raise SpecError(
            f"unknown format {fmt!r}; expected FORMAT[:FILE] with FORMAT one of "
            f"{', '.join(FORMATS)}",
            "--report",
        )
    if sep and not file:
        raise SpecError(f"expected a file after {fmt}:; got {text!r}", "--report")
    return Output(fmt, Path(file) if file else None)


def requested(
    reports: list[str],
    json_out: Path | None,
    csv_out: Path | None,
    hlog_out: Path | None,
) -> list[Output]:
    """Every output asked for, checked before the run starts: each file can be written."""
    outputs = [parse_report(r) for r in reports]
    for fmt, path in (("json", json_out), ("csv", csv_out), ("hlog", hlog_out)):
        if path is not None:
            outputs.append(Output(fmt, path, f"--{fmt}-out"))
    for output in outputs:
        if output.path is not None:
            check_output(output.path, output.option)
    return outputs


@dataclass(frozen=True)
class Written:
    output: Output
    text: str  # the rendered report
    error: str = ""  # why the file could not be written; "" when it was (or is for stdout)


def write(outputs: list[Output], stored: StoredRun) -> list[Written]:
    """Render each output and write its file; a file that fails does not stop the others."""
    done = []
    for output in outputs:
        text = render(stored, output.format)
        error = ""
        if output.path is not None:
            try:
                write_text(output.path, text)
            except OSError as exc:
                error = f"cannot write {output.path}: {exc.strerror or exc}"
        done.append(Written(output, text, error))
    return done

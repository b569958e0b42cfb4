"""Issue 39 item 12 (labels): a NaN or infinite search setting is refused naming its own
field or flag. It read "--set: search: expected a table or nothing; got {'probe': nan}":
the whole [search] table was blamed, under a --set the person never typed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from workbench.cli.main import build_app
from workbench.sdk.errors import SpecError
from workbench.spec.steps import load_spec


@pytest.mark.parametrize("field", ["probe", "start", "precision"])
def test_a_non_finite_search_field_names_the_field(field: str) -> None:
    with pytest.raises(SpecError) as refused:
        load_spec(None, [f"search.{field}=nan"])
    assert refused.value.where == f"--set: search.{field}"
    assert "finite" in refused.value.message


@pytest.mark.parametrize("flag", ["--probe", "--start", "--precision"])
def test_a_non_finite_search_flag_names_the_flag(flag: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"WORKBENCH_STORE": str(tmp_path / "runs.sqlite")}
    res = CliRunner().invoke(
        build_app(["search"]), ["search", flag, "inf", "-t", "p99<1ms"], env=env
    )
    assert res.exit_code == 2, res.output
    assert f"{flag}: expected a finite number" in res.output, res.output
    assert "--set" not in res.output and not (tmp_path / "runs.sqlite").exists()

"""Saving over an existing profile keeps its comments, or goes to a new file; shipped
profiles are found by name and never written to."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from workbench.spec.profile_files import CHECKOUT, find_profile, is_shipped, shipped_dir
from workbench.spec.save import save_spec
from workbench.spec.steps import load_spec

HAND_WRITTEN = """\
# My experiment: this comment must survive a save.
name = "mine"

[target]
system = "embedded"   # in-process

[load]
concurrency = [1, 4]  # the sweep I care about
duration = "2s"       # short on purpose
# ops = 100
"""


def test_saving_over_a_hand_written_profile_keeps_its_comments(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HAND_WRITTEN)
    spec = load_spec(path)
    changed = replace(spec, seed=7, load=replace(spec.load, warmup=0.5))
    assert save_spec(changed, path, header="Saved by a test.") == path
    text = path.read_text()
    for kept in (
        "# My experiment: this comment must survive a save.",
        'system = "embedded"   # in-process',
        "concurrency = [1, 4]  # the sweep I care about",
        'duration = "2s"       # short on purpose',
        "# ops = 100",
    ):
        assert kept in text, kept
    assert "Saved by a test." not in text  # the header is for new files only
    assert "seed = 7" in text and "warmup = 0.5" in text
    assert "key_prefix" not in text  # defaults the file left out stay out
    assert load_spec(path) == changed


def test_a_changed_value_keeps_its_comment_and_a_dropped_sweep_becomes_a_value(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(HAND_WRITTEN)
    spec = load_spec(path)
    single = replace(spec, sweep=(), load=replace(spec.load, concurrency=8, duration=3.0))
    assert save_spec(single, path) == path
    text = path.read_text()
    assert "concurrency = 8  # the sweep I care about" in text
    assert "duration = 3.0       # short on purpose" in text
    assert load_spec(path) == single


def test_a_file_that_cannot_be_updated_faithfully_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    broken = "# half-edited by hand\n[load\nconcurrency = 4\n"
    path.write_text(broken)
    spec = load_spec(None, ["load.concurrency=4"])
    written = save_spec(spec, path, header="Saved by a test.")
    assert written == tmp_path / "mine-1.toml"
    assert path.read_text() == broken
    assert load_spec(written) == spec
    assert save_spec(spec, path) == tmp_path / "mine-2.toml"


def test_profiles_are_found_by_name_from_anywhere(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)  # no profiles/ here: the shipped (checkout) ones
    assert shipped_dir() == CHECKOUT
    assert find_profile(Path("quick")) == CHECKOUT / "quick.toml"
    assert find_profile(Path("quick.toml")) == CHECKOUT / "quick.toml"
    assert find_profile(Path("nope")) == Path("nope")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "quick.toml").write_text('name = "local"\n')
    assert find_profile(Path("quick")) == Path("profiles/quick.toml")  # here wins
    assert not is_shipped(CHECKOUT / "quick.toml")  # a checkout is yours to edit

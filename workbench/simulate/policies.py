"""The eviction policies a step can be simulated with, by the names profiles and flags use."""

from __future__ import annotations

from collections.abc import Iterable

from workbench.sdk.errors import SpecError

# name -> what it is, for help texts and reports; belady knows the future: an upper bound.
POLICIES: dict[str, str] = {
    "lru": "exact LRU",
    "fifo": "FIFO",
    "random": "random eviction",
    "clock": "CLOCK",
    "s3fifo": "S3-FIFO",
    "sieve": "SIEVE",
    "arc": "ARC",
    "twoq": "2Q",
    "wtinylfu": "W-TinyLFU",
    "lhd": "LHD",
    "belady": "Belady (knows the future: an upper bound)",
}
INSTALL = "pip install 'cache-workbench[sim]' (./dev setup installs it)"


def parse_policies(given: Iterable[str] | str, where: str = "simulate.policies") -> tuple[str, ...]:
    """Policy names from a list or "lru,s3fifo"; "all" is every one. Unknown names are a
    SpecError naming the known ones."""
    names = given.split(",") if isinstance(given, str) else list(given)
    out: list[str] = []
    for raw in names:
        name = str(raw).strip().lower().replace("-", "")
        if not name:
            continue
        if name == "all":
            out += [p for p in POLICIES if p not in out]
            continue
        if name not in POLICIES:
            raise SpecError(
                f"expected policies among {', '.join(POLICIES)} (or all); got {raw!r}", where
            )
        if name not in out:
            out.append(name)
    return tuple(out)

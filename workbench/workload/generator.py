"""Seeded workload generation: operations, keys, value sizes and TTLs for one virtual client.

Distributions are written as text (``zipf(0.99)``, ``hotcold(0.8,0.2)``, ``uniform(8,3000)``)
and parsed here once, at load time for validation and in each worker for generation.
Values are slices of one pre-generated random buffer, so no op allocates a value.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from workbench.workload.forms import Dist
from workbench.workload.keys import (
    SEQUENCE_STRIDE,
    hot_end,
    key_chooser,
    key_table,
    key_template,
    owned_chooser,
)


def size_chooser(dist: Dist, rng: random.Random) -> Callable[[], int]:
    if dist.kind == "fixed":
        size = int(dist.params[0])
        return lambda: size
    if dist.kind == "uniform":
        lo, hi = int(dist.params[0]), int(dist.params[1])
        return lambda: rng.randint(lo, hi)
    sizes = [int(s) for s in dist.params[0::2]]
    cum = list(itertools.accumulate(dist.params[1::2]))
    choices = rng.choices
    return lambda: choices(sizes, cum_weights=cum)[0]


def ttl_chooser(dist: Dist, rng: random.Random) -> Callable[[], float | None]:
    if dist.kind == "none":
        return lambda: None
    if dist.kind == "fixed":
        ttl = dist.params[0]
        return lambda: ttl
    lo, hi = dist.params
    return lambda: rng.uniform(lo, hi)


class ValueBuffer:
    """One random buffer; values are memoryview slices of it, so none is allocated per op."""

    SPREAD = 4096

    def __init__(self, max_size: int, seed: int) -> None:
        self.data = random.Random(seed).randbytes(max_size + self.SPREAD)
        self.view = memoryview(self.data)

    def value(self, key_index: int, size: int) -> memoryview:
        # The offset depends on the key only, so a value can be checked against its key.
        off = key_index % self.SPREAD
        return self.view[off : off + size]


@dataclass
class Op:
    code: int
    key_index: int
    key: bytes
    size: int
    ttl: float | None


class OpStream:
    """The seeded operation sequence of one virtual client; same seed, same sequence.

    `next` is on the hot path of every op: it avoids `random.choices` and f-string
    formatting (each about 1 µs) in favour of bisect on cumulative weights and a key table.
    """

    def __init__(
        self,
        *,
        mix: Mapping[int, float],
        key_dist: Dist,
        keys: int,
        key_offset: int,
        key_prefix: str,
        key_length: int,
        value_size: Dist,
        ttl: Dist,
        seed: int,
        client_id: int,
        owner: tuple[int, int] = (0, 1),
    ) -> None:
        """`owner` = (worker, workers): draw only the keys that worker owns (`owned_chooser`),
        for systems whose every worker holds its own cache."""
        self.rng = random.Random(f"{seed}:{client_id}")
        self.codes = list(mix)
        total = sum(mix.values())
        self.cum = [c / total for c in itertools.accumulate(mix.values())]
        self.cum[-1] = 1.0
        self.key_offset = key_offset
        self.hot_end = hot_end(key_dist, keys, key_offset)
        self.prefix, self.key_length = key_prefix, key_length
        self.key_format = key_template(key_prefix, key_length)
        self.key_table = key_table(self.key_format, key_offset, keys)
        self.next_key = owned_chooser(
            key_chooser(key_dist, keys, self.rng, start=client_id * SEQUENCE_STRIDE), keys, *owner
        )
        self.next_size = size_chooser(value_size, self.rng)
        self.next_ttl = ttl_chooser(ttl, self.rng)
        self.next = self._make_next()

    def _make_next(self) -> Callable[[], tuple[int, int, bytes, int, float | None]]:
        """(op code, key index, key, value size, ttl), as one closure over local names."""
        codes, cum, rand = self.codes, self.cum, self.rng.random
        single = codes[0] if len(codes) == 1 else None
        next_key, next_size, next_ttl = self.next_key, self.next_size, self.next_ttl
        offset, table, fmt = self.key_offset, self.key_table, self.key_format
        pick = bisect.bisect_right

        def nxt() -> tuple[int, int, bytes, int, float | None]:
            code = single if single is not None else codes[pick(cum, rand())]
            local = next_key()
            key = table[local] if table is not None else (fmt % (offset + local)).encode()
            return code, offset + local, key, next_size(), next_ttl()

        return nxt


def share(total: int | None, plans: int, all_clients: int) -> int | None:
    """A worker's part of an op budget: `total` split by its share of the clients
    (rounded half to even, at least 1), 0 for a worker without clients; None: no budget."""
    if total is None:
        return None
    return max(1, round(total * plans / max(all_clients, 1))) if plans else 0

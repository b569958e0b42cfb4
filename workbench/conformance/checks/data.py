"""Checks on one client: connect, misses, byte-exact round trips, delete and TTL."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

from workbench.conformance.bounded import CheckFailed, OpenConnection, Skip
from workbench.conformance.checks.probes import probe_key, show, size_text, token
from workbench.conformance.settings import Target

SIZES = (0, 1, 100, 1024, 16 * 1024, 100 * 1024, 1024 * 1024)
TTL_SLACK = 2.5  # seconds past a TTL by which the key must be gone (memcached: 1 s clock)


async def check_connect(t: Target) -> str:
    async with OpenConnection(t) as s:
        await s.client()
        await s.client()
    return "connect, two clients, close"


async def check_miss(t: Target) -> str:
    p = f"wbcheck:{token()}:"
    async with OpenConnection(t) as s:
        c = await s.client()
        d = s.calls
        for i in range(3):
            got = await d.get(c, probe_key(p, "absent", i))
            if got is not None:
                raise CheckFailed(f"a key never set read back as {show(got)}, not None")
        await d.set(c, probe_key(p, "gone"), b"x", None)
        if "delete" in t.strategy.operations:
            await d.delete(c, probe_key(p, "gone"))
            got = await d.get(c, probe_key(p, "gone"))
            if got is not None:
                raise CheckFailed(f"a deleted key read back as {show(got)}, not None")
    return "absent keys read as None"


async def check_round_trip(t: Target) -> str:
    p = f"wbcheck:{token()}:"
    rng = random.Random(7)
    # Like the engine's value buffer: values are slices of one big buffer (memoryview).
    pool = rng.randbytes(max(SIZES) + 4096)
    view = memoryview(pool)
    async with OpenConnection(t) as s:
        c = await s.client()
        d = s.calls
        keys = []
        try:
            for size in SIZES:
                plain = rng.randbytes(size)
                if size >= 6:  # protocol delimiters at both ends and a NUL
                    plain = b"\r\n\x00" + plain[3:-2] + b"\r\n"
                off = 1 + size % 4093
                for kind, value in (("bytes", plain), ("memoryview", view[off : off + size])):
                    key = probe_key(p, size, kind)
                    keys.append(key)
                    await d.set(c, key, value, None)
                    got = await d.get(c, key)
                    want = bytes(value)
                    if got != want:
                        raise CheckFailed(
                            f"{size_text(size)} {kind} value read back as {show(got)}, "
                            f"expected {show(want)}"
                        )
            # Overwrite: the second value wins, also when it is shorter.
            key = probe_key(p, "overwrite")
            keys.append(key)
            await d.set(c, key, b"a" * 2000, None)
            await d.set(c, key, b"bb", None)
            got = await d.get(c, key)
            if got != b"bb":
                raise CheckFailed(f"after overwriting, read back {show(got)}, expected b'bb'")
        finally:
            if "delete" in t.strategy.operations:
                for key in keys:
                    with contextlib.suppress(Exception):
                        await d.delete(c, key)
    sizes = f"{size_text(SIZES[0])}..{size_text(SIZES[-1])}"
    return f"byte-exact at {sizes}, bytes and memoryview; overwrite"


async def check_delete(t: Target) -> str:
    if "delete" not in t.strategy.operations:
        raise Skip("strategy declares no delete")
    p = f"wbcheck:{token()}:"
    async with OpenConnection(t) as s:
        c = await s.client()
        d = s.calls
        key = probe_key(p, "k")
        await d.set(c, key, b"value", None)
        existed = await d.delete(c, key)
        got = await d.get(c, key)
        if got is not None:
            raise CheckFailed(f"after delete, read back {show(got)}, not None")
        absent = await d.delete(c, probe_key(p, "never"))
        if existed is None and absent is None:
            return "deleted keys miss; delete does not say whether the key was there (None)"
        if existed is not True or absent is not False:
            raise CheckFailed(
                f"delete returned {existed!r} for a present key and {absent!r} for an absent "
                "one; expected True and False"
            )
    return "deleted keys miss; delete returns True/False"


async def check_ttl(t: Target) -> str:
    if not t.strategy.supports_ttl():
        raise Skip(t.strategy.lacks.get("ttl") or "strategy declares no set, so no TTL")
    p = f"wbcheck:{token()}:"
    short, sub = 2.0, 0.5
    async with OpenConnection(t) as s:
        c = await s.client()
        d = s.calls
        keys = {
            "none": (probe_key(p, "none"), None),
            "long": (probe_key(p, "long"), 300.0),
            "short": (probe_key(p, "short"), short),
            "sub": (probe_key(p, "sub"), sub),
        }
        start = time.monotonic()
        for key, ttl in keys.values():
            await d.set(c, key, b"v", ttl)
        got = await d.get(c, keys["short"][0])
        if got != b"v" and time.monotonic() - start < short - 1.0:
            raise CheckFailed(f"a key set with ttl={short:g}s missed at once ({show(got)})")
        deadline = start + short + TTL_SLACK
        pending = {"short", "sub"}
        gone_at: dict[str, float] = {}
        while pending and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            for name in sorted(pending):
                if await d.get(c, keys[name][0]) is None:
                    gone_at[name] = time.monotonic() - start
                    pending.discard(name)
        if "sub" in pending or ("sub" not in gone_at) or gone_at["sub"] > sub + TTL_SLACK:
            raise CheckFailed(
                f"a key set with ttl={sub:g}s was still there after "
                f"{time.monotonic() - start:.1f}s (a sub-second TTL must not mean no expiry)"
            )
        if "short" in pending:
            raise CheckFailed(
                f"a key set with ttl={short:g}s was still there after {short + TTL_SLACK:g}s"
            )
        if gone_at["short"] < short - 1.05:
            raise CheckFailed(
                f"a key set with ttl={short:g}s expired after {gone_at['short']:.1f}s"
            )
        for name in ("none", "long"):
            got = await d.get(c, keys[name][0])
            if got != b"v":
                raise CheckFailed(f"a key set with ttl={keys[name][1]} expired ({show(got)})")
        if "delete" in t.strategy.operations:
            for name in ("none", "long"):
                with contextlib.suppress(Exception):
                    await d.delete(c, keys[name][0])
    return (
        f"ttl={short:g}s gone after {gone_at['short']:.1f}s, ttl={sub:g}s after "
        f"{gone_at['sub']:.1f}s; ttl=None and 300s kept"
    )

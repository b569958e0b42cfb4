"""What Valkey declares about itself for the core (its URLs, the option that sizes its
cache, the cores its server may use, its INFO figures and its refusals): the SDK's facts
of a RESP server (`workbench.sdk.resp.facts`) under Valkey's name. With ``io_threads`` =
N, N - 1 threads read, parse and write for the main one, so a managed server may use N
cores."""

from __future__ import annotations

from workbench.sdk.resp import RespFacts
from workbench_valkey.target import DEFAULT_URL, SYSTEM

FACTS = RespFacts(SYSTEM, "Valkey", DEFAULT_URL)

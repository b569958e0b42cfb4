"""What Redis declares about itself for the core (its URLs, the option that sizes its
cache, the cores its server may use, its INFO figures and its refusals): the SDK's facts
of a RESP server (`workbench.sdk.resp.facts`) under Redis's name."""

from __future__ import annotations

from workbench.sdk.resp import RespFacts
from workbench_redis.target import DEFAULT_URL, SYSTEM

# memtier_benchmark's protocol names for RESP (its default is "redis").
FACTS = RespFacts(SYSTEM, "Redis", DEFAULT_URL, tool_protocols=("redis", "resp2", "resp3"))

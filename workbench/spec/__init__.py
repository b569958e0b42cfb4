"""Experiment specs: the model, loading from TOML with overrides, and planning into steps."""

from workbench.spec.model import (
    Load,
    OpGroup,
    PubSub,
    Spec,
    StrategySpec,
    SweepAxis,
    TargetSpec,
    Workload,
    spec_from_dict,
    spec_to_dict,
)

__all__ = [
    "Load",
    "OpGroup",
    "PubSub",
    "Spec",
    "StrategySpec",
    "SweepAxis",
    "TargetSpec",
    "Workload",
    "spec_from_dict",
    "spec_to_dict",
]

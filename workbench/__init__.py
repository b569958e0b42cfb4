"""Cache Workbench: cache experiments with a live TUI and a headless CLI on one core."""

__version__ = "0.1.0"

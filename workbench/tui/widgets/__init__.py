"""Reusable TUI widgets: they take data (attributes down) and post messages (up)."""

"""Ray's own log lines in a file the run names, never on the terminal the CLI or the TUI
draws on. Ray itself is handed in by the launcher, the only module that imports it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, TextIO

RAY_LOGGER = "ray"


class _RayRecords(logging.Handler):
    """On the root logger: records of Ray's loggers into the file, every other record as
    Python would treat it without this handler (warnings and worse on stderr)."""

    def __init__(self, file: TextIO) -> None:
        super().__init__()
        self.file = file
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == RAY_LOGGER or record.name.startswith(RAY_LOGGER + "."):
            self.file.write(self.format(record) + "\n")
        elif logging.lastResort is not None and record.levelno >= logging.lastResort.level:
            logging.lastResort.handle(record)


class RayLog:
    """Ray's own log lines, in a file: its loggers' records and what it prints on the driver.

    Ray's loggers are caught on the root logger: `ray.init` clears the "ray" logger's
    own handlers (and then warns, from its thread, that it set no SIGTERM handler).
    Ray prints the messages its raylets push to the driver (a node's last log lines when
    it dies, memory monitor warnings...) from a thread of its own, straight to
    sys.stdout: `ray._private.worker.print_to_stdstream`. Ray has no switch for that
    (`log_to_driver=False` covers the actors' output only), so the module's function is
    replaced by one that writes here; `close` puts everything back.
    """

    def __init__(self, path: Path, ray_worker: Any) -> None:
        """`ray_worker`: Ray's `ray._private.worker` module, whose printer is replaced."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.file: TextIO = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self.handler = _RayRecords(self.file)
        logger = logging.getLogger(RAY_LOGGER)
        self.saved = (logger.level, logger.propagate, list(logger.handlers))
        for h in self.saved[2]:  # Ray's own stderr handler would draw under the TUI
            logger.removeHandler(h)
        logger.setLevel(logging.INFO)
        logger.propagate = True
        logging.getLogger().addHandler(self.handler)
        self.ray_worker = ray_worker
        self.printer = ray_worker.print_to_stdstream
        ray_worker.print_to_stdstream = self.print_to_stdstream

    def print_to_stdstream(self, data: dict[str, Any], ignore_prefix: bool = False) -> None:
        source = data.get("pid", "")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        for line in data.get("lines", []):
            self.file.write(f"{stamp} ({source}) {line}\n")

    def close(self) -> None:
        logging.getLogger().removeHandler(self.handler)
        logger = logging.getLogger(RAY_LOGGER)
        level, propagate, handlers = self.saved
        for h in handlers:
            logger.addHandler(h)
        logger.setLevel(level)
        logger.propagate = propagate
        self.ray_worker.print_to_stdstream = self.printer
        self.file.close()

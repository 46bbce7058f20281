"""Structured JSON logs, one object per line, keyed by job id and tenant
where there is one. Document text is never logged: only ids, counts,
states, codes and timings go into ``extra``.

Third-party loggers are brought in line: uvicorn's and RapidOCR's (which
otherwise prints coloured text of its own) go through the same handler, and
asyncio's accept errors (one per failed ``accept()`` when descriptors run
out) are let through at most once per message every
:data:`REPEAT_INTERVAL_S` seconds.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from pythonjsonlogger.json import JsonFormatter

FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"
REPEAT_INTERVAL_S = 10.0
#: loggers of libraries that install handlers of their own
ADOPTED = ("uvicorn", "uvicorn.error", "uvicorn.access", "RapidOCR")


def configure_logging(json_logs: bool = True, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if json_logs:
        handler.setFormatter(json_formatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_drop_colours)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("httpx", "httpcore"):  # their INFO lines carry full webhook URLs (tokens in queries)
        logging.getLogger(name).setLevel(logging.WARNING)
    adopt_library_loggers()
    logging.getLogger("asyncio").addFilter(RepeatFilter(REPEAT_INTERVAL_S))


def _drop_colours(record: logging.LogRecord) -> bool:
    """uvicorn adds a terminal-coloured copy of its messages as an extra field."""
    record.__dict__.pop("color_message", None)
    return True


def json_formatter() -> logging.Formatter:
    return JsonFormatter(FIELDS, rename_fields={"asctime": "ts", "levelname": "level", "name": "logger"})


def adopt_library_loggers() -> None:
    """Make the loggers of :data:`ADOPTED` write through the root handler."""
    for name in ADOPTED:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True


class RepeatFilter(logging.Filter):
    """Passes a message at most once per ``interval_s`` seconds."""

    def __init__(self, interval_s: float) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        key = str(record.msg)
        with self._lock:
            if now - self._last.get(key, -self.interval_s) < self.interval_s:
                return False
            self._last[key] = now
            if len(self._last) > 1000:
                self._last.clear()
        return True

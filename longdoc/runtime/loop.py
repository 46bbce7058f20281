"""Background loops: the one way longdoc runs work on a thread of its own
(the reconciler, retention, the webhook outbox, heartbeats, the audit
writer, the embedded pools' feeders and watchdog).

A :class:`Loop` calls ``step`` on a daemon thread: every ``interval_s``, or
at once when :meth:`Loop.wake` is called, until :meth:`Loop.stop`. A step
may return how many seconds to wait before the next pass (``0``: at once;
``None``: the interval). An exception is logged with the loop's name and
never ends the loop. ``stop`` sets the flag a step can poll
(:attr:`Loop.stopping`), wakes the thread and joins it for a bounded time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("longdoc.loop")

Step = Callable[[], "float | None | object"]


class Loop:
    """``step`` every ``interval_s`` on a daemon thread named ``name``;
    ``at_start``: the first pass runs at once rather than after an interval."""

    def __init__(self, step: Step, interval_s: float, name: str, *, at_start: bool = False) -> None:
        self.step, self.interval_s, self.name = step, interval_s, name
        self._at_start = at_start
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Loop:
        self._thread.start()
        return self

    def wake(self) -> None:
        """Run the next pass now (or right after the one under way)."""
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def begin_stop(self) -> None:
        """Ask the loop to end after the pass under way; never waits."""
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop and wait up to ``timeout`` seconds for its thread."""
        self.begin_stop()
        self.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds for the loop to end (a step may end
        it: :meth:`begin_stop`)."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        delay: float = 0.0 if self._at_start else self.interval_s
        while True:
            if delay > 0:
                self._wake.wait(delay)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                result = self.step()
            except Exception:
                log.exception("background pass failed", extra={"loop": self.name})
                result = None
            delay = float(result) if isinstance(result, (int, float)) and not isinstance(result, bool) \
                else self.interval_s

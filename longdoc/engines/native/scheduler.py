"""The decode scheduler: one thread steps every running sequence together.

Sessions (one per document, each on the pipeline's thread) prefill their
group, then :meth:`Scheduler.run` hands the sequence over and waits. The
scheduler's loop gathers every sequence waiting for a step, runs one
batched :meth:`~longdoc.engines.native.decoder.Decoder.step` for all of them
(greedy, with the model's no-repeat-n-gram guard: :mod:`.ngram`), lets each sequence read its token, and wakes a session
whose group is done. A cancelled sequence leaves at the next step.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from longdoc.engines.native.runtime import NativeModel
from longdoc.engines.native.sequence import DocumentSequence
from longdoc.errors import JobCancelled


@dataclass
class _Entry:
    sequence: DocumentSequence
    cancel: threading.Event
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Scheduler:
    def __init__(self, model: NativeModel, max_batch: int) -> None:
        self.model = model
        self.max_batch = max_batch
        self._entries: list[_Entry] = []
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self.steps = 0
        self.tokens = 0
        self.largest_batch = 0

    def run(self, sequence: DocumentSequence, cancel: threading.Event) -> None:
        """Decode ``sequence``'s group to its end (blocks). Raises JobCancelled."""
        if sequence.done:
            return
        entry = _Entry(sequence, cancel)
        with self._cv:
            self._start()
            self._entries.append(entry)
            self._cv.notify_all()
        entry.done.wait()
        if entry.error is not None:
            raise entry.error

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop = False
            self._thread = threading.Thread(target=self._loop, name="longdoc-native-decode", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._entries and not self._stop:
                    self._cv.wait()
                if self._stop:
                    for entry in self._entries:
                        entry.error = JobCancelled("The native engine was closed.")
                        entry.done.set()
                    self._entries.clear()
                    return
                batch = self._entries[: self.max_batch]
            self._step(batch)

    def _step(self, batch: list[_Entry]) -> None:
        live, inputs = [], []
        for entry in batch:
            if entry.cancel.is_set():
                self._finish(entry, JobCancelled("The document was cancelled while decoding."))
                continue
            try:
                inputs.append(entry.sequence.next_input())
            except Exception as exc:  # noqa: BLE001 - a sequence that cannot step fails alone, the loop goes on
                self._finish(entry, exc)
                continue
            live.append(entry)
        if not live:
            return
        seqs = [e.sequence for e in live]
        try:
            with self.model.lock:
                # [misc]: a live sequence has been prefilled, its kv is set
                logits = self.model.decoder.step([s.kv for s in seqs], [t for t, _ in inputs],  # type: ignore[misc]
                                                 [p for _, p in inputs], [s.focus() for s in seqs])
        except Exception as exc:  # noqa: BLE001 - the sessions report it
            for entry in live:
                self._finish(entry, exc)
            return
        self.steps += 1
        self.tokens += len(seqs)
        self.largest_batch = max(self.largest_batch, len(seqs))
        for entry, row in zip(live, logits):
            try:
                entry.sequence.accept(entry.sequence.choose(row))
            except Exception as exc:  # noqa: BLE001 - never leave a session waiting on a dead loop
                self._finish(entry, exc)
                continue
            if entry.sequence.done:
                self._finish(entry, None)

    def _finish(self, entry: _Entry, error: BaseException | None) -> None:
        entry.error = error
        with self._cv:
            if entry in self._entries:
                self._entries.remove(entry)
        entry.done.set()

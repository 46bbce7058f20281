"""Streaming accumulation in the openai engine's client: CPU time to read a
streamed answer of N and of 2N deltas (httpx MockTransport, no server),
and their ratio (about 2 when accumulation is linear; it was about 4, and
8.3 s of CPU for 25,600 deltas, when the running size was recomputed per
delta).

    python bench/stream.py [--deltas 25600]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import httpx

from _common import ROOT  # noqa: F401  (puts the repo root on sys.path)

from longdoc.engines.openai.client import ModelClient


def _sse(deltas: int) -> bytes:
    events = [json.dumps({"choices": [{"delta": {"content": f"{i:04x} "}, "finish_reason": None}]})
              for i in range(deltas)]
    events.append(json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}))
    return "".join(f"data: {e}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def cpu_seconds(deltas: int) -> float:
    content = _sse(deltas)
    client = ModelClient("http://model.test/v1", None, 60.0, 0, threading.BoundedSemaphore(1),
                         transport=httpx.MockTransport(lambda request: httpx.Response(200, content=content)))
    start = time.process_time()
    answer = client.complete({"stream": True}, lambda: False)
    spent = time.process_time() - start
    assert len(answer.text) == 5 * deltas
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=25_600)
    n = parser.parse_args().deltas
    cpu_seconds(1000)  # warm-up
    one, two = cpu_seconds(n), cpu_seconds(2 * n)
    print(f"{n} deltas: {one:.3f} s CPU; {2 * n} deltas: {two:.3f} s CPU; ratio {two / one:.2f} (linear: ~2)")


if __name__ == "__main__":
    main()

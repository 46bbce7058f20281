"""The engines' gauges on ``/metrics``, read from the process's
:class:`~longdoc.pipeline.host.EngineHost` at scrape time, whatever the
engines are.

- per engine (by its key): the workspace in use and its limit, page groups
  in flight and waiting (every engine has an admission);
- ``longdoc_engine_figure{engine, figure}``: every figure an engine exports
  (its ``figures()``: KV bytes reserved, requests in flight, …);
- the gauges named before that family (:data:`NAMED_FIGURES`), kept for the
  dashboards and alerts that read them: each is one figure of it.
"""

from __future__ import annotations

from functools import partial

from longdoc.pipeline.host import EngineHost
from longdoc.runner.metrics import Metrics

#: (gauge, the figure it shows, help): gauges that name one engine figure
NAMED_FIGURES = (
    ("longdoc_kv_reserved_bytes", "kv_reserved_bytes", "KV bytes reserved by running sequences (native engine)"),
    ("longdoc_kv_limit_bytes", "kv_limit_bytes", "kv_cache_watermark × the KV capacity (native engine)"),
    ("longdoc_kv_sequences", "kv_sequences", "Sequences holding a KV reservation (native engine)"),
    ("longdoc_kv_sequences_waiting", "kv_sequences_waiting", "Sequences waiting for KV room (native engine)"),
    ("longdoc_model_requests_in_flight", "requests_in_flight", "Requests in flight to a model server, per engine"),
)


def install_engine_metrics(metrics: Metrics, host: EngineHost, default: str) -> None:
    """Register the engines' gauges on ``metrics``; ``default`` is the
    engine ``longdoc_workspace_bytes`` and ``longdoc_workspace_limit_bytes``
    show (the settings' own)."""
    metrics.workspace_bytes.set_function(lambda: host.admission(default).workspace.in_use)
    metrics.workspace_limit_bytes.set_function(lambda: host.admission(default).workspace.limit)
    admissions = host.admissions
    metrics.mirror("longdoc_engine_workspace", "Workspace in use per engine, in its unit (bytes for page engines, "
                   "estimated KV tokens for model engines)", "engine",
                   lambda: {n: float(a.workspace.in_use) for n, a in admissions().items()})
    metrics.mirror("longdoc_engine_workspace_limit", "kv_cache_watermark × the engine's workspace budget", "engine",
                   lambda: {n: float(a.workspace.limit) for n, a in admissions().items()})
    metrics.mirror("longdoc_engine_groups_in_flight", "Page groups admitted and running per engine", "engine",
                   lambda: {n: float(a.in_flight) for n, a in admissions().items()})
    metrics.mirror("longdoc_engine_groups_waiting", "Page groups waiting for room under the watermark", "engine",
                   lambda: {n: float(a.waiting) for n, a in admissions().items()})
    metrics.mirror("longdoc_engine_figure", "Live figures each engine exports (KV bytes reserved, requests in "
                   "flight, …), by engine and figure name", ("engine", "figure"), partial(_all_figures, host))
    for name, figure, doc in NAMED_FIGURES:
        metrics.mirror(name, doc, "engine", partial(_one_figure, host, figure))


def _all_figures(host: EngineHost) -> dict[tuple[str, str], float]:
    """Every figure of every engine, by (engine key, figure)."""
    return {(engine, figure): float(value) for engine, values in host.figures().items()
            for figure, value in values.items()}


def _one_figure(host: EngineHost, figure: str) -> dict[str, float]:
    """``figure`` of every engine that exports it, by engine key."""
    return {engine: float(values[figure]) for engine, values in host.figures().items() if figure in values}

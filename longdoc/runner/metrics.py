"""Prometheus metrics of the job layer, on a registry of their own.

Counters and histograms are updated as jobs run; gauges that mirror the
database or the queue (jobs by state, queue depth) are read at scrape time
through callbacks the service installs, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

STAGE_BUCKETS = (0.001, 0.005, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)


class _Mirror(Collector):
    """A gauge whose values come from a callback at scrape time: one per
    value of its ``labels`` (``read`` returns a mapping, keyed by the label's
    value, or by a tuple of values for several labels), or a single value
    with no labels (``read`` returns a number). A failing callback gives the
    family no sample rather than failing the scrape."""

    def __init__(self, name: str, doc: str, labels: tuple[str, ...],
                 read: Callable[[], Mapping[Any, float]] | Callable[[], float]):
        self.name, self.doc, self.labels, self.read = name, doc, labels, read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.doc, labels=list(self.labels) or None)
        try:
            values: Mapping[Any, float] | float | None = self.read()
        except Exception:  # a scrape must not fail because the DB (or an engine) blinked
            values = {} if self.labels else None
        if not self.labels:
            if values is not None:
                family.add_metric([], float(values))  # type: ignore[arg-type]  # unlabelled: read gives a number
        else:
            for key, value in sorted(values.items()):  # type: ignore[union-attr]  # labelled: a mapping
                family.add_metric(list(key) if isinstance(key, tuple) else [key], float(value))
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)  # process_resident_memory_bytes, cpu, fds
        r = self.registry
        self.pages = Counter("longdoc_pages", "Pages finished (rate() gives pages/s)", ["status", "source"], registry=r)
        self.page_flags = Counter("longdoc_page_flags", "Pages finished with each flag (fallback, truncated, "
                                  "repetition, low_confidence, rotated, downscaled, blank)", ["flag"], registry=r)
        self.jobs_finished = Counter("longdoc_jobs_finished", "Jobs that reached a final state", ["state"], registry=r)
        self.stage_seconds = Histogram(
            "longdoc_stage_seconds", "Time per page and stage (render, recognize, layout, text_layer) and per job",
            ["stage"], buckets=STAGE_BUCKETS, registry=r,
        )
        self.submit_seconds = Histogram("longdoc_submit_seconds", "Submit latency (upload to 202)", registry=r,
                                        buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
        self.workspace_bytes = Gauge("longdoc_workspace_bytes", "Workspace in use (images/results in flight)", registry=r)
        self.workspace_limit_bytes = Gauge("longdoc_workspace_limit_bytes", "kv_cache_watermark × workspace budget", registry=r)
        self.webhook_attempts = Counter("longdoc_webhook_attempts", "Webhook delivery attempts", ["outcome"], registry=r)
        self.errors = Counter("longdoc_errors", "Errors returned to clients, by code", ["code"], registry=r)
        self.audit_dropped = Counter("longdoc_audit_records_dropped", "Audit records not written (the writer's "
                                     "queue full, or the database failing at shutdown)", registry=r)

    def mirror(self, name: str, doc: str, label: str | tuple[str, ...],
               read: Callable[[], Mapping[Any, float]]) -> None:
        """A gauge with one value per ``label`` value (per tuple of values,
        for several labels), read at scrape time."""
        self.registry.register(_Mirror(name, doc, (label,) if isinstance(label, str) else label, read))

    def mirror_value(self, name: str, doc: str, read: Callable[[], float]) -> None:
        """A gauge without labels, read at scrape time."""
        self.registry.register(_Mirror(name, doc, (), read))

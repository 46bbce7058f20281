"""What the service shows of its engines, whatever they are (in process,
the plugins of ``tests/plugins/reporting.py``): an engine's figures are on
/metrics as ``longdoc_engine_figure``, its ready details on /readyz, and an
engine written before either existed still serves, shows nothing more, and
breaks neither."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api.harness import InProcessServer
from tests.docgen import english_report
from tests.service.helpers import accepted, submit, wait_terminal

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "reporting.py"


def _server(root: Path, engine: str, other: str) -> InProcessServer:
    return InProcessServer(root, inference={"engine": engine, "plugins": [str(PLUGIN)], "regions": False,
                                            "page_chunk_size": 2, "chunk_overlap": 0},
                           service={"tenant_engines": [other]}).start()


@pytest.fixture(scope="module")
def three_pages(tmp_path_factory):
    return english_report(tmp_path_factory.mktemp("figures-doc"), pages=3, seed=5)


@pytest.fixture(scope="module")
def gauged(tmp_path_factory):
    srv = _server(tmp_path_factory.mktemp("inprocess-gauged"), "gauged", "plain")
    yield srv
    srv.stop()


def _ready(srv: InProcessServer) -> httpx.Response:
    """/readyz once the start-up's warm-up thread (none configured) has said so."""
    deadline = time.monotonic() + 30
    while (r := srv.request("GET", "/readyz")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    return r


def _figures(srv: InProcessServer) -> dict[tuple[str, str], dict[str, float]]:
    """(metric, figure or "") → engine → value, for the engines' gauges."""
    r = srv.request("GET", "/metrics")
    assert r.status_code == 200
    out: dict[tuple[str, str], dict[str, float]] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            if "engine" in s.labels:
                out.setdefault((s.name, s.labels.get("figure", "")), {})[s.labels["engine"]] = s.value
    return out


def _read(srv: InProcessServer, key, doc, engine: str) -> tuple[dict, str]:
    with srv.http(key) as http:
        job = accepted(submit(http, doc.pdf_path, {"engine": engine, "ocr": "force", "formats": ["txt"]}))
        final = wait_terminal(http, job["id"])
        text = http.get(f"/v1/jobs/{job['id']}/result", params={"format": "txt"}).text
    return final, text


def test_an_engines_figures_are_on_metrics_and_its_details_on_readyz(gauged, three_pages):
    ready = _ready(gauged)
    assert ready.status_code == 200, ready.text
    checks = ready.json()["checks"]
    assert checks["engine"] is True and checks["engine_version"] == "gauged-1"
    # the engine's own details; a value /readyz has no type for comes as text
    assert checks["gauged_model"] == "gauge-7b" and checks["gauged_load_seconds"] == "0.25"

    final, text = _read(gauged, gauged.create_key("figures"), three_pages, "gauged")
    assert final["state"] == "succeeded" and "Gauged page 3" in text, final
    figures = _figures(gauged)
    assert figures[("longdoc_engine_figure", "pages_read")] == {"gauged": 3.0}
    assert figures[("longdoc_engine_figure", "sessions_open")] == {"gauged": 0.0}
    # the gauges named after one figure show only engines that export it
    assert ("longdoc_kv_reserved_bytes", "") not in figures
    assert ("longdoc_model_requests_in_flight", "") not in figures


def test_an_engine_with_neither_figures_nor_details_still_serves(gauged, three_pages):
    final, text = _read(gauged, gauged.create_key("plain"), three_pages, "plain")
    assert final["state"] == "succeeded" and final["engine"] == "plain", final
    assert [f"Plain page {n}" in text for n in (1, 2, 3)] == [True, True, True]
    figures = _figures(gauged)
    assert "plain" in figures[("longdoc_engine_workspace", "")]  # it has an admission like any engine
    assert all("plain" not in engines for (name, _), engines in figures.items() if name == "longdoc_engine_figure")
    assert gauged.request("GET", "/readyz").status_code == 200


def test_readyz_of_a_server_whose_engine_says_nothing_more(tmp_path, three_pages):
    srv = _server(tmp_path, "plain", "gauged")
    try:
        ready = _ready(srv)
        assert ready.status_code == 200, ready.text
        checks = ready.json()["checks"]
        assert checks["engine"] is True and checks["engine_version"] == "plain-1"
        assert not any(name.startswith("gauged_") for name in checks)
        final, _ = _read(srv, srv.create_key("plain"), three_pages, "plain")
        assert final["state"] == "succeeded", final
        assert not any(name == "longdoc_engine_figure" for name, _ in _figures(srv))
    finally:
        srv.stop()

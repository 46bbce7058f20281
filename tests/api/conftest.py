"""Fixtures of the in-process API tests (:mod:`tests.api.harness`): the
routes, container and task pools of ``longdoc serve`` in this process, no
OCR model loaded (they are in the fast tier)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.harness import InProcessServer
from tests.service.conftest import docs_dir, long_doc, report_doc  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The shared in-process service with the default test config."""
    srv = InProcessServer(tmp_path_factory.mktemp("inprocess-shared")).start()
    yield srv
    srv.stop()


@pytest.fixture
def start_app(tmp_path):
    """``start_app(**overrides) -> InProcessServer`` (started), stopped at teardown."""
    started: list[InProcessServer] = []

    def start(**overrides: dict[str, Any]) -> InProcessServer:
        srv = InProcessServer(tmp_path / f"app-{len(started)}", **overrides)
        started.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        srv = item.funcargs.get("server")
        if isinstance(srv, InProcessServer):
            report.sections.append(("in-process service log (tail)", srv.log_text()[-4000:]))

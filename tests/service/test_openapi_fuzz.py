"""Schemathesis against the live server's own ``/openapi.json``: for every
operation, a bounded number of generated requests (schema-conforming ones,
then schema-violating ones) with valid credentials; none may answer 5xx.

The operations are listed at collection time from the app's schema (no
server needed); each test then takes the operation from the live server's
``/openapi.json``. Schemathesis' own ``from_fixture`` loader does not work
with pytest 9 (it reads ``request.node._nodeid``), hence ``as_strategy``.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from longdoc.config import Settings
from longdoc.service.app import create_app
from tests.service.conftest import Server

EXAMPLES = {GenerationMode.POSITIVE: 15, GenerationMode.NEGATIVE: 8}
OPERATIONS = [
    (method.upper(), path)
    for path, item in sorted(create_app(Settings()).openapi()["paths"].items())
    for method in sorted(item)
]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("server-fuzz"), service={"sync_timeout_seconds": 5}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def live_schema(fuzz_server):
    return schemathesis.openapi.from_url(f"{fuzz_server.url}/openapi.json")


@pytest.fixture(scope="module")
def fuzz_headers(fuzz_server):
    key = fuzz_server.create_key("fuzz", rate_limit=100_000)
    return {"api": key.headers, "admin": fuzz_server.admin_headers()}


@pytest.mark.parametrize("method, path", OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_server_errors(fuzz_server, live_schema, fuzz_headers, method, path):
    operation = live_schema[path][method]
    headers = fuzz_headers["admin" if path.startswith("/admin") else "api"]

    for mode, examples in EXAMPLES.items():
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def run(case):
            case.call_and_validate(base_url=fuzz_server.url, headers=headers, checks=[not_a_server_error],
                                   timeout=60)

        try:
            run()
        except Unsatisfiable:
            # nothing in this operation can violate its schema (no parameters,
            # or only free-form path strings): there are no negative cases
            assert mode is GenerationMode.NEGATIVE

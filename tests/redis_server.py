"""A private ``redis-server`` for a test (the machine's own binary, no
persistence), on a free port, restartable on that port; with ``tls`` it
listens only over TLS (``--port 0 --tls-port P``) with the server
certificate of :mod:`tests.pki`, clients not asked for a certificate.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tests.conftest import free_port
from tests.pki import Pki

REDIS_SERVER = shutil.which("redis-server")


class Redis:
    """A private redis-server (restartable on the same port)."""

    def __init__(self, root: Path, tls: Pki | None = None) -> None:
        self.port = free_port()
        self.tls = tls
        self.log = root / "redis.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        listen = ["--port", str(self.port)]
        if self.tls is not None:
            listen = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.tls.server_cert),
                      "--tls-key-file", str(self.tls.server_key), "--tls-ca-cert-file", str(self.tls.ca),
                      "--tls-auth-clients", "no"]
        with open(self.log, "ab") as log:  # the server has its own copy of the descriptor
            self.proc = subprocess.Popen(
                [REDIS_SERVER, *listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        ping = ["redis-cli", "-p", str(self.port), "ping"]
        if self.tls is not None:
            ping[1:1] = ["--tls", "--cacert", str(self.tls.ca)]
        deadline = time.monotonic() + 10
        while subprocess.run(ping, capture_output=True).stdout.strip() != b"PONG":
            assert self.proc.poll() is None, f"redis-server exited:\n{self.log.read_text(errors='replace')[-2000:]}"
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

"""Keys that expire and rotate, made with the real CLI (``longdoc keys
create --expires-in``, ``longdoc keys rotate --grace``, ``longdoc keys
list``) against the database of a served ``longdoc serve`` process, and used
over HTTP. No OCR model: nothing is parsed."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import httpx
from prometheus_client.parser import text_string_to_metric_families

from longdoc.cli import main
from tests.service.conftest import Server
from tests.service.helpers import error_code, list_jobs, wait_refused

EXPIRY_WAIT_S = 30.0


def keys_cli(srv: Server, *args: str, check: bool = True):
    return srv.cli("keys", *args, "--config", str(srv.config_path), check=check)


def printed(stdout: str) -> tuple[dict[str, str], str]:
    """The ``name: value`` lines and the last line (the key) of a keys command."""
    lines = stdout.strip().splitlines()
    return dict(line.split(": ", 1) for line in lines[:-1]), lines[-1].strip()


def assert_key_expired(r: httpx.Response) -> None:
    assert r.status_code == 401 and error_code(r) == "key_expired", r.text
    assert "administrator" in r.json()["error"]["hint"]


def listed(srv: Server) -> dict[str, dict]:
    rows = [json.loads(line) for line in keys_cli(srv, "list").stdout.splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def expiring(srv: Server) -> float:
    r = httpx.get(f"{srv.url}/metrics", timeout=30)
    family = next(f for f in text_string_to_metric_families(r.text) if f.name == "longdoc_api_keys_expiring")
    return family.samples[0].value


def test_keys_expire_and_rotate_through_the_cli_and_the_served_api(start_server):
    srv = start_server()
    fields, long_key = printed(keys_cli(srv, "create", "--tenant", "acme", "--expires-in", "90d").stdout)
    assert datetime.fromisoformat(fields["expires_at"]) - datetime.now().astimezone() > timedelta(days=89)
    old_fields, old_key = printed(keys_cli(srv, "create", "--tenant", "acme").stdout)
    assert old_fields["expires_at"] == "never"
    # a CLI run takes seconds here: each short-lived key is used as soon as it is made
    short_fields, short_key = printed(keys_cli(srv, "create", "--tenant", "acme", "--expires-in", "8s").stdout)
    assert list_jobs(srv, short_key).status_code == 200

    new_fields, new_key = printed(keys_cli(srv, "rotate", old_fields["id"], "--grace", "8s").stdout)
    assert list_jobs(srv, old_key).status_code == 200  # during its grace period
    assert list_jobs(srv, new_key).status_code == 200
    assert new_key.startswith("ld_") and new_key not in (old_key, long_key)
    assert (new_fields["tenant"], new_fields["replaces"]) == ("acme", old_fields["id"])
    assert new_fields["webhook_secret"] == old_fields["webhook_secret"]
    assert new_fields["old_key_expires_at"] != "never"

    assert_key_expired(wait_refused(srv, short_key, EXPIRY_WAIT_S))
    assert_key_expired(wait_refused(srv, old_key, EXPIRY_WAIT_S))  # after its grace period
    assert list_jobs(srv, new_key).status_code == 200
    assert list_jobs(srv, long_key).status_code == 200

    rows = listed(srv)
    assert rows[short_fields["id"]]["state"] == "expired"
    assert (rows[old_fields["id"]]["state"], rows[old_fields["id"]]["replaced_by"]) == ("expired", new_fields["id"])
    assert rows[new_fields["id"]]["state"] == "active" and rows[new_fields["id"]]["expires_at"] is None
    assert rows[fields["id"]]["expires_at"] == fields["expires_at"]

    assert expiring(srv) == 0
    keys_cli(srv, "create", "--tenant", "bravo", "--expires-in", "3d")
    assert expiring(srv) == 1


def test_bad_cli_input_is_refused_with_stable_codes(tmp_path, capsys):
    """The same commands in this process (``longdoc.cli.main``): they need only the database."""
    config = tmp_path / "config.yaml"
    config.write_text(f"database:\n  url: sqlite:///{tmp_path / 'longdoc.db'}\n", encoding="utf-8")

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["keys", *args, "--config", str(config)])
        out, err = capsys.readouterr()
        return code, out, err

    for args, code in ((("create", "--tenant", "acme", "--expires-in", "90"), "invalid_duration"),
                       (("create", "--tenant", "acme", "--expires-in", "0d"), "invalid_duration"),
                       (("create", "--tenant", "acme", "--expires-in", "3651d"), "invalid_duration"),
                       (("rotate", "0" * 32), "key_not_found")):
        rc, _, err = run(*args)
        assert rc == 2 and f"error [{code}]" in err and "hint: " in err, (args, err)
    rc, out, _ = run("create", "--tenant", "acme")
    fields, _ = printed(out)
    rc, _, err = run("rotate", fields["id"], "--grace", "-1d")
    assert rc == 2 and "error [invalid_duration]" in err
    rc, out, _ = run("rotate", fields["id"])
    assert rc == 0 and printed(out)[0]["replaces"] == fields["id"]
    assert printed(out)[0]["grace"] == "7d"  # service.key_rotation_grace
    rc, _, err = run("rotate", fields["id"])  # already rotated
    assert rc == 2 and "error [key_not_rotatable]" in err
    run("revoke", fields["id"])
    rc, out, _ = run("list")
    states = {row["id"]: row["state"] for row in map(json.loads, out.splitlines())}
    assert states[fields["id"]] == "revoked" and sorted(states.values()) == ["active", "revoked"]

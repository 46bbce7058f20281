#!/usr/bin/env bash
# Create .venv and install longdoc (plus extras given as $1, e.g. "test").
# Idempotent: reinstalls only when pyproject.toml changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=".venv/.installed-${extras:-base}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    if [ -n "$extras" ]; then
        .venv/bin/python -m pip install -q -e ".[$extras]"
    else
        .venv/bin/python -m pip install -q -e .
    fi
    touch "$stamp"
fi

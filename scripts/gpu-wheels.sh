#!/usr/bin/env bash
# The wheels bench/gpu_check.py needs on a lent GPU machine (docs/gpu-check.md).
#
# That machine has no network; its image has Python 3.12, torch with CUDA,
# numpy, Pillow, PyYAML, psutil, tqdm, httpx, typer, … and transformers
# 5.17, which lacks Unlimited-OCR, and no pydantic. This downloads, here,
# the pinned wheels of what is missing or too old there, for CPython 3.12 on
# manylinux x86_64, one version of each, without dependencies (the list is
# explicit), into .gpu-wheels/ (ignored by git; the device tool carries it
# when `carry` names it). The whole working tree that travels must stay
# under 64 MiB, so the total is checked.
#
#   scripts/gpu-wheels.sh            # → .gpu-wheels/*.whl, prints the total size
#
# On the device (the one command, docs/gpu-check.md):
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#     --target /tmp/site .gpu-wheels/*.whl && export PYTHONPATH=/tmp/site && python3 bench/gpu_check.py
set -euo pipefail

cd "$(dirname "$0")/.."
DEST=${GPU_WHEELS:-.gpu-wheels}
LIMIT_MIB=${GPU_WHEELS_LIMIT_MIB:-64}

# transformers 5.24.0 is the first with Unlimited-OCR as the engine uses it
# (the torch extra's pin); the rest are its runtime needs that the image has
# too old or not at all, and what `import longdoc.engines.native.engine`
# needs beyond the image (pydantic and pydantic-settings for longdoc.config
# and longdoc.model, tenacity for the openai client the engine's parsers sit
# beside), rapidfuzz for the check's edit distances. huggingface-hub is the image's own 1.33.0 (transformers wants
# >=1.31,<3; 2.x would need httpx2), so a bare image works too.
WHEELS=(
  transformers==5.24.0
  tokenizers==0.23.3
  safetensors==0.8.0
  huggingface-hub==1.33.0
  regex==2026.11.19
  pydantic==2.14.4
  pydantic-core==2.50.5
  annotated-types==0.8.0
  typing-inspection==0.4.5
  typing-extensions==4.16.0
  pydantic-settings==2.16.3
  python-dotenv==1.2.4
  tenacity==9.2.1
  rapidfuzz==3.14.6
)

PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in .venv/bin/python python3; do
    if "$candidate" -m pip --version >/dev/null 2>&1; then PY=$candidate; break; fi
  done
fi
[ -n "$PY" ] || { echo "gpu-wheels: no python with pip (set PYTHON=...)" >&2; exit 1; }

PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do
  PLATFORMS+=(--platform "$p")
done

rm -rf "$DEST"
mkdir -p "$DEST"
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp "${PLATFORMS[@]}" -d "$DEST" "${WHEELS[@]}" \
  2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)

# one wheel per pin, nothing else
count=$(find "$DEST" -maxdepth 1 -name '*.whl' | wc -l)
if [ "$count" -ne "${#WHEELS[@]}" ]; then
  echo "gpu-wheels: ${count} wheels for ${#WHEELS[@]} pins:" >&2
  ls "$DEST" >&2
  exit 1
fi

ls -l "$DEST" | awk 'NR > 1 { printf "  %8.2f MiB  %s\n", $5 / 1048576, $9 }'
wheels=$(du -cb "$DEST"/*.whl | tail -1 | cut -f1)
tree=0
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # what travels besides: tracked files and untracked ones git does not ignore
  tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null \
         | awk '$2 == "total" { s += $1 } END { print s + 0 }')
fi
limit=$((LIMIT_MIB * 1048576))
awk -v n="$count" -v w="$wheels" -v t="$tree" -v d="$DEST" -v l="$LIMIT_MIB" 'BEGIN {
  printf "gpu-wheels: %d wheels, %.2f MiB in %s; with the working tree (%.2f MiB): %.2f MiB of %d MiB\n",
         n, w / 1048576, d, t / 1048576, (w + t) / 1048576, l }'
if [ $((wheels + tree)) -gt "$limit" ]; then
  echo "gpu-wheels: over the ${LIMIT_MIB} MiB the device tool carries" >&2
  exit 1
fi
echo "on the device (carry: [\"$DEST\"]):"
echo "  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $DEST/*.whl && export PYTHONPATH=/tmp/site && PYTHONUNBUFFERED=1 python3 bench/gpu_check.py"

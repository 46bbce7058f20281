#!/usr/bin/env bash
# Set up and start the service with the embedded defaults (SQLite and a
# local folder under ./data, in-process queue and workers). Creates a local
# API key the first time and prints a curl command to paste.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p data
if [ ! -s data/dev-api-key ]; then
    (umask 077; .venv/bin/longdoc keys create --tenant local | tail -n 1 > data/dev-api-key)
fi
key=$(cat data/dev-api-key)
port=$(.venv/bin/longdoc config show | awk '/^service:/{s=1} s && /port:/{print $2; exit}')
cat <<MSG
longdoc is starting on http://127.0.0.1:${port}: web console at http://127.0.0.1:${port}/console, API docs at /docs. Your API key (tenant "local") is in data/dev-api-key.
Once /readyz answers 200 (about 15 s: warm-up runs a real page), open

  http://127.0.0.1:${port}/console   and paste the key:   ${key}

or, in another terminal:

  curl -H "Authorization: Bearer ${key}" -F file=@longdoc/samples/sample.pdf "http://127.0.0.1:${port}/v1/parse?format=md"

or as a job:

  curl -H "Authorization: Bearer ${key}" -F file=@longdoc/samples/sample.pdf http://127.0.0.1:${port}/v1/jobs
  curl -H "Authorization: Bearer ${key}" "http://127.0.0.1:${port}/v1/jobs/<id>?wait=60"
  curl -H "Authorization: Bearer ${key}" "http://127.0.0.1:${port}/v1/jobs/<id>/result?format=md"

Stop with Ctrl-C (running jobs are checkpointed and resume on the next start).
MSG
exec .venv/bin/longdoc serve

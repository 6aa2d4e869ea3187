#!/usr/bin/env bash
# The main job until `podgate run` lands: start the test app, probe it the way
# the kubelet would, flip its readiness and probe again.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

bin=$(mktemp -d)/podgate
go build -o "$bin" ./cmd/podgate
port=${DEMO_PORT:-18080}
health=$(mktemp -d)/healthy

"$bin" testapp --port "$port" --exec-file "$health" &
app=$!
trap 'kill $app 2>/dev/null; wait $app 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/" >/dev/null 2>&1 && break
  sleep 0.1
done

echo "--- readiness probe (httpGet /readyz on named port http)"
"$bin" probe -f examples/probes/readiness.yaml --host 127.0.0.1 --port "http=$port"
curl -fsS -X POST "http://127.0.0.1:$port/toggleReady" >/dev/null
echo "--- readiness probe after /toggleReady (a failure exits 1)"
if "$bin" probe -f examples/probes/readiness.yaml --host 127.0.0.1 --port "http=$port"; then
  echo "expected a failure" >&2; exit 1
fi
echo "--- exec liveness probe"
"$bin" probe -f examples/probes/liveness-exec.yaml --env "HEALTH_FILE=$health"

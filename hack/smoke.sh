#!/usr/bin/env bash
# CI smoke test of the README's main job: `podgate run` on the hello example,
# a request through the gate, `podgate get`, then `podgate probe` against the
# test app, and a graceful stop.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bin=$dir/podgate
go build -o "$bin" ./cmd/podgate
api=127.0.0.1:${SMOKE_API_PORT:-19790}
cidr=${SMOKE_POD_CIDR:-127.0.90.0/24}
listen=127.0.0.1:${SMOKE_LISTEN_PORT:-18090}

"$bin" run -f examples/hello.yaml --api "$api" --pod-cidr "$cidr" --listen "$listen" >"$dir/run.out" 2>"$dir/run.err" &
run=$!
# The binary (tens of MB) and the logs go with the run, whatever its end.
cleanup() { kill -9 "$run" 2>/dev/null || true; wait "$run" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

ip=""
for _ in $(seq 300); do
  if "$bin" get pods --api "$api" --no-headers 2>/dev/null | grep -q " 2/2 .*Running"; then
    ip=$("$bin" get pods --api "$api" -o json | sed -n 's/.*"podIP": "\([0-9.]*\)".*/\1/p' | head -n1)
    break
  fi
  sleep 0.1
done
[ -n "$ip" ] || { echo "pod never became ready"; cat "$dir/run.err"; exit 1; }

echo "--- podgate get pods -o wide"
"$bin" get pods --api "$api" -o wide
echo "--- curl http://$ip:8012/ (through the gate)"
curl -fsS "http://$ip:8012/"
echo "--- front door: curl -H 'Host: hello.default.example.com' http://$listen/"
grep "podgate: curl" "$dir/run.err"
curl -fsS -H 'Host: hello.default.example.com' "http://$listen/"
echo "--- gate's view: http://$ip:8022/readyz?verbose"
curl -fsS "http://$ip:8022/readyz?verbose"
echo "--- podgate probe: the app's readiness the kubelet's way"
echo "httpGet: {port: 8080, path: /readyz}" | "$bin" probe -f - --host "$ip"
echo "--- podgate get events"
"$bin" get events --api "$api"

kill -INT "$run"
for _ in $(seq 900); do kill -0 "$run" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$run" 2>/dev/null; then echo "podgate run did not stop"; exit 1; fi
wait "$run" || { echo "podgate run exited non-zero"; cat "$dir/run.err"; exit 1; }
grep "all pods stopped" "$dir/run.err"

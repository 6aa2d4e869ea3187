#!/usr/bin/env bash
# Builds a real Kubernetes control plane from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (with
# kustomize built in) and etcd, pinned by the tools modules in hack/k8s.
#
# The binaries go to a cache directory keyed by the tools' go.sum files, this
# script and the Go version, so a second run is a cache hit (a fraction of a
# second) and a change of any pin builds again. Prints that directory (the
# only line on stdout); progress goes to stderr.
#
#   hack/k8s-build.sh            # build if needed, print the bin directory
#   PODGATE_K8S_CACHE=DIR hack/k8s-build.sh
#
# Cold: about 5 minutes on an idle 2-core machine, up to 15 when loaded.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tools="$repo/hack/k8s"
k8s_version=v1.37.2 # keep in step with hack/k8s/go.mod

key=$( {
  go version
  cat "$tools/go.mod" "$tools/go.sum" "$tools/etcd/go.mod" "$tools/etcd/go.sum" "$tools/etcd/main.go"
  cat "$0"
} | sha256sum | cut -c1-16)
cache="${PODGATE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podgate/k8s}"
bin="$cache/$key/bin"
want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

complete() {
  for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done
}
if complete; then
  echo "k8s-build: cache hit $bin" >&2
  echo "$bin"
  exit 0
fi

# One build at a time per cache: a second caller waits for the first.
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if complete; then
  echo "$bin"
  exit 0
fi

tmp="$cache/$key/tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $v.gitVersion=$k8s_version -X $v.gitMajor=$major -X $v.gitMinor=$minor"
  ldflags+=" -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"
done

start=$(date +%s)
step() { echo "k8s-build: $* ($(( $(date +%s) - start ))s)" >&2; }
export CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly"
step "building etcd"
(cd "$tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" .)
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  step "building $cmd $k8s_version (cold: minutes)"
  (cd "$tools" && go build -trimpath -ldflags "$ldflags" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done
mkdir -p "$bin"
for b in "${want[@]}"; do mv "$tmp/$b" "$bin/$b"; done
step "done: $bin"
echo "$bin"

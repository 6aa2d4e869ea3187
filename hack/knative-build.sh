#!/usr/bin/env bash
# Builds every binary the Knative stack of `podgate cluster up --knative`
# runs, from the Go module proxy, each piece pinned by a tools module of
# its own:
#
#   piece       tools module          binaries
#   kube-proxy  hack/k8s/kube-proxy   kube-proxy (k8s.io/kubernetes v1.37.2)
#   coredns     hack/coredns          coredns (v1.15.0, the plugins the
#                                     cluster DNS uses: hack/coredns/main.go)
#   knative     hack/knative          knative-{controller,webhook,activator,
#                                     autoscaler,queue} (Serving v0.50.0)
#   traefik     hack/traefik          traefik (v3.6.12)
#
# All static (CGO_ENABLED=0: podgate's node runs them from OCI images
# without a libc), -trimpath, stripped (-s -w).
#
# Each piece is cached in a directory of its own, keyed by its tools
# module's go.mod, go.sum and Go files, this script's commands (not its comments)
# and the Go version: a changed pin rebuilds only its piece, and a second
# run is a cache hit (milliseconds).
# The binaries of the pieces asked for are linked into one directory, which
# is printed (the only line on stdout); progress goes to stderr. One build
# per piece at a time: a second caller waits for the first (flock).
#
#   hack/knative-build.sh                   # all pieces; prints the bin directory
#   hack/knative-build.sh coredns traefik   # only these pieces
#   PODGATE_KNATIVE_CACHE=DIR hack/knative-build.sh
#
# Cold (empty Go caches, right after hack/k8s-build.sh, an idle 2-core
# machine, Nov 2026): kube-proxy 26 s (the control plane's packages are
# cached), coredns 95 s, knative 142 s, traefik 442 s; 705 s in all.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
self="$repo/hack/knative-build.sh"
k8s_version=v1.37.2      # keep in step with hack/k8s/kube-proxy/go.mod
traefik_version=v3.6.12  # keep in step with hack/traefik/go.mod
all=(kube-proxy coredns knative traefik)

# tools PIECE: the piece's tools module.
tools() {
  case $1 in
  kube-proxy) echo "$repo/hack/k8s/kube-proxy" ;;
  coredns | knative | traefik) echo "$repo/hack/$1" ;;
  *) echo "knative-build: unknown piece $1 (pieces: ${all[*]})" >&2; return 1 ;;
  esac
}

# binaries PIECE: the names it puts into the bin directory.
binaries() {
  case $1 in
  kube-proxy | coredns | traefik) echo "$1" ;;
  knative) echo knative-controller knative-webhook knative-activator knative-autoscaler knative-queue ;;
  esac
}

pieces=("$@")
[ ${#pieces[@]} -gt 0 ] || pieces=("${all[@]}")

cache="${PODGATE_KNATIVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podgate/knative}"
goversion=$(go version)
declare -A key
for p in "${pieces[@]}"; do
  t=$(tools "$p")
  key[$p]=$( {
    echo "$goversion"
    cat "$t/go.mod" "$t/go.sum"
    cat "$t"/*.go 2>/dev/null || true # a piece's own main (coredns)
    grep -v '^[[:space:]]*#' "$self"
  } | sha256sum | cut -c1-16)
done

# The directory printed: links to the binaries of the pieces asked for,
# keyed by their keys.
bin="$cache/bin/$( for p in "${pieces[@]}"; do echo "$p ${key[$p]}"; done | sort -u | sha256sum | cut -c1-16)"

complete() { # complete DIR NAME...
  local d=$1 b
  shift
  for b in "$@"; do [ -x "$d/$b" ] || return 1; done
}
want() { for p in "${pieces[@]}"; do binaries "$p"; done | tr ' ' '\n'; }

if complete "$bin" $(want); then
  echo "knative-build: cache hit $bin" >&2
  echo "$bin"
  exit 0
fi

start=$(date +%s)
step() { echo "knative-build: $* ($(( $(date +%s) - start ))s)" >&2; }
export CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly"

# build PIECE OUT: builds the piece's binaries into the directory OUT.
build() {
  local p=$1 out=$2 t ldflags v major minor
  t=$(tools "$p")
  case $p in
  kube-proxy)
    # The same version stamp as hack/k8s-build.sh's servers.
    major=${k8s_version#v}; major=${major%%.*}
    minor=${k8s_version#v*.}; minor=${minor%%.*}
    ldflags="-s -w"
    for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $v.gitVersion=$k8s_version -X $v.gitMajor=$major -X $v.gitMinor=$minor"
      ldflags+=" -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"
    done
    (cd "$t" && go build -trimpath -ldflags "$ldflags" -o "$out/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy)
    ;;
  coredns)
    # hack/coredns/main.go: CoreDNS with the plugins the cluster uses.
    (cd "$t" && go build -trimpath -ldflags "-s -w" -o "$out/coredns" .)
    ;;
  knative)
    # One go build for the five: their shared packages compile once.
    mkdir -p "$out/cmd"
    (cd "$t" && go build -trimpath -ldflags "-s -w" -o "$out/cmd/" \
      knative.dev/serving/cmd/controller knative.dev/serving/cmd/webhook \
      knative.dev/serving/cmd/activator knative.dev/serving/cmd/autoscaler \
      knative.dev/serving/cmd/queue)
    for v in controller webhook activator autoscaler queue; do mv "$out/cmd/$v" "$out/knative-$v"; done
    rmdir "$out/cmd"
    ;;
  traefik)
    v=github.com/traefik/traefik/v3/pkg/version
    (cd "$t" && go build -trimpath \
      -ldflags "-s -w -X $v.Version=$traefik_version -X $v.BuildDate=1970-01-01T00:00:00Z" \
      -o "$out/traefik" github.com/traefik/traefik/v3/cmd/traefik)
    ;;
  esac
}

mkdir -p "$cache"
tmps=()
trap 'rm -rf "${tmps[@]}"' EXIT
for p in "${pieces[@]}"; do
  dir="$cache/$p/${key[$p]}"
  # shellcheck disable=SC2046 # the names are words
  complete "$dir" $(binaries "$p") && continue
  # One build of a piece at a time: a second caller waits for the first.
  exec 9>"$cache/.lock-$p"
  flock 9
  # shellcheck disable=SC2046
  if ! complete "$dir" $(binaries "$p"); then
    tmp="$cache/$p/tmp.$$"
    tmps+=("$tmp")
    rm -rf "$tmp"
    mkdir -p "$tmp"
    step "building $p (cold: minutes)"
    build "$p" "$tmp"
    rm -rf "$dir"
    mv -T "$tmp" "$dir"
    step "built $p: $dir"
  fi
  exec 9>&-
done

# Link the pieces' binaries into the printed directory, made whole in a
# temporary directory first and renamed into place (a concurrent caller
# may have done it already).
link="$cache/bin/tmp.$$"
tmps+=("$link")
rm -rf "$link"
mkdir -p "$link"
for p in "${pieces[@]}"; do
  for b in $(binaries "$p"); do
    ln "$cache/$p/${key[$p]}/$b" "$link/$b" 2>/dev/null || cp "$cache/$p/${key[$p]}/$b" "$link/$b"
  done
done
mv -T "$link" "$bin" 2>/dev/null || complete "$bin" $(want)
step "done: $bin"
echo "$bin"

#!/usr/bin/env bash
# Builds podgate's container images without docker: podgate's image (the
# one binary, every subcommand: the webhook, the activator, the node) and
# the gate's image (podgate-gate, the gate alone, which runs in every
# pod), each a static binary (CGO_ENABLED=0, -trimpath, stripped, its
# version linked in) in an OCI image of that one file at /podgate, run as
# user 65532:65532 (nonroot: neither writes a file nor needs a capability), both
# written into one OCI image layout directory. Prints the references with
# their digests on stdout, one a line, podgate's first, e.g.
#   ghcr.io/podgate/podgate:v0.3.0@sha256:…
#   ghcr.io/podgate/podgate-gate:v0.3.0@sha256:…
# (--only podgate or --only gate: that image alone, its line the only one);
# progress goes to stderr. The same binary always gives the same digest.
#
#   hack/image.sh                          # layout in ~/.cache/podgate/oci
#   hack/image.sh -o DIR --tarball FILE    # and one tarball of both for docker load / kind load
#   hack/image.sh --only podgate           # podgate's image alone
#   GOARCH=arm64 hack/image.sh --version v0.3.0
#
# Options: -o|--layout DIR (default ${XDG_CACHE_HOME:-~/.cache}/podgate/oci,
# never inside the repository), --tarball FILE, --version V (default: git
# describe), --repo NAME (default ghcr.io/podgate/podgate), --gate-repo
# NAME (default ghcr.io/podgate/podgate-gate), --only podgate|gate.
# Then: podgate run --image-layout DIR, or crane/skopeo push from DIR.
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo_root"

layout="${XDG_CACHE_HOME:-$HOME/.cache}/podgate/oci"
tarball=""
version=""
image_repo="ghcr.io/podgate/podgate"
gate_repo="ghcr.io/podgate/podgate-gate"
only=""
usage() { echo "image.sh: $1 (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -o|--layout|--tarball|--version|--repo|--gate-repo|--only) [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value" ;;
  esac
  case "$1" in
    -o|--layout) layout=$2; shift 2 ;;
    --tarball) tarball=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --repo) image_repo=$2; shift 2 ;;
    --gate-repo) gate_repo=$2; shift 2 ;;
    --only) case "$2" in podgate|gate) only=$2 ;; *) usage "--only $2: want podgate or gate" ;; esac; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) usage "unknown argument $1" ;;
  esac
done
if [ -z "$version" ]; then
  version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
fi

# Build outputs never go into the repository (nothing built is committed).
for out in "$layout" ${tarball:+"$tarball"}; do
  case "$(realpath -m "$out")/" in
    "$(realpath "$repo_root")"/*) usage "$out is inside the repository; write images elsewhere (default: the user cache)" ;;
  esac
done

[ -z "$tarball" ] || mkdir -p "$(dirname "$tarball")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# What to build: the command, and the repository of its image; podgate's
# first, so its line comes first.
builds=()
[ "$only" = gate ] || builds+=("podgate $image_repo")
[ "$only" = podgate ] || builds+=("podgate-gate $gate_repo")
image_args=()
for b in "${builds[@]}"; do
  read -r cmd repo <<<"$b"
  start=$EPOCHREALTIME
  echo "image.sh: building $cmd $version for linux/${GOARCH:-$(go env GOARCH)}" >&2
  CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/$cmd" "./cmd/$cmd"
  built=$EPOCHREALTIME
  echo "image.sh: $cmd binary $(stat -c %s "$tmp/$cmd") bytes in $(awk "BEGIN { printf \"%.1f\", $built - $start }")s" >&2
  image_args+=(-binary "$tmp/$cmd" -ref "$repo:$version")
done

# The image tool runs here, whatever platform the binaries are for.
env -u GOOS -u GOARCH go run ./hack/image "${image_args[@]}" \
  -layout "$layout" ${tarball:+-tarball "$tarball"}
echo "image.sh: layout $layout; run it with: podgate run --image-layout $layout -f …" >&2

#!/usr/bin/env bash
# Builds podgate's container image without docker: a static podgate binary
# (CGO_ENABLED=0, -trimpath, stripped, its version linked in) in an OCI
# image of that one file at /podgate, written into an OCI image layout
# directory. Prints the image reference with its digest (the only line on
# stdout), e.g. ghcr.io/podgate/podgate:v0.3.0@sha256:…; progress goes to
# stderr. The same binary always gives the same digest.
#
#   scripts/image.sh                          # layout in ~/.cache/podgate/oci
#   scripts/image.sh -o DIR --tarball FILE    # and a tarball for docker load / kind load
#   GOARCH=arm64 scripts/image.sh --version v0.3.0
#
# Options: -o|--layout DIR (default ${XDG_CACHE_HOME:-~/.cache}/podgate/oci,
# never inside the repository), --tarball FILE, --version V (default: git
# describe), --repo NAME (default ghcr.io/podgate/podgate).
# Then: podgate run --image-layout DIR, or crane/skopeo push from DIR.
set -euo pipefail
repo_root=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo_root"

layout="${XDG_CACHE_HOME:-$HOME/.cache}/podgate/oci"
tarball=""
version=""
image_repo="ghcr.io/podgate/podgate"
usage() { echo "image.sh: $1 (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -o|--layout|--tarball|--version|--repo) [ $# -ge 2 ] && [ -n "$2" ] || usage "$1 needs a value" ;;
  esac
  case "$1" in
    -o|--layout) layout=$2; shift 2 ;;
    --tarball) tarball=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --repo) image_repo=$2; shift 2 ;;
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
start=$EPOCHREALTIME
echo "image.sh: building podgate $version for linux/${GOARCH:-$(go env GOARCH)}" >&2
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/podgate" ./cmd/podgate
built=$EPOCHREALTIME
echo "image.sh: binary $(stat -c %s "$tmp/podgate") bytes in $(awk "BEGIN { printf \"%.1f\", $built - $start }")s" >&2

# The image tool runs here, whatever platform the binary is for.
env -u GOOS -u GOARCH go run ./hack/image -binary "$tmp/podgate" -ref "$image_repo:$version" \
  -layout "$layout" ${tarball:+-tarball "$tarball"}
echo "image.sh: layout $layout; run it with: podgate run --image-layout $layout -f …" >&2

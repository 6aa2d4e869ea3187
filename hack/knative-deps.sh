#!/usr/bin/env bash
# Installs the Debian packages kube-proxy execs for its proxy mode, only
# when a command is missing (as root, with apt-get), as .ci/run does for
# chromium:
#
#   hack/knative-deps.sh            # nftables mode (the default): nft
#   hack/knative-deps.sh iptables   # iptables mode: iptables, ip6tables,
#                                   # iptables-save, iptables-restore
#
# kube-proxy v1.37 execs these programs by name from its PATH (the
# nftables proxier through sigs.k8s.io/knftables, which runs `nft`); its
# conntrack cleanup talks netlink itself, so the conntrack program is not
# needed. They are dynamically linked Debian programs: kube-proxy must run
# where they are (on the host, in the cluster's network namespace), not
# from a libc-less image.
set -euo pipefail
mode=${1:-nftables}
case $mode in
nftables) cmds=(nft) pkgs=(nftables) ;;
iptables) cmds=(iptables ip6tables iptables-save iptables-restore) pkgs=(iptables) ;;
*) echo "knative-deps: unknown mode $mode (nftables or iptables)" >&2; exit 2 ;;
esac
missing=0
for c in "${cmds[@]}"; do
  command -v "$c" >/dev/null || PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null || missing=1
done
if [ $missing = 1 ]; then
  echo "knative-deps: installing ${pkgs[*]} for kube-proxy's $mode mode" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=900 update >&2
  apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends "${pkgs[@]}" >&2
fi
for c in "${cmds[@]}"; do
  PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null || { echo "knative-deps: $c still missing" >&2; exit 1; }
done

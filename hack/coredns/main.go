// Command coredns is CoreDNS v1.15.0 with the plugins the cluster DNS of
// `podgate cluster up --knative` uses (kube/knative's Corefile: the
// kubernetes zone, errors, health, ready, cache, reload, loadbalance),
// and a few a user reading or changing that Corefile reaches for first:
// bind, log, prometheus metrics, loop. CoreDNS's own main imports all of
// its plugins, among them the cloud DNS providers (route53, azure,
// clouddns) whose SDKs made most of its build time; a plugin is included
// by importing it, as CoreDNS documents for compile-time plugin
// selection. The order plugins run in is CoreDNS's own list
// (dnsserver.Directives), whatever the order here. A Corefile that names
// a plugin not built in (e.g. forward) is refused at start with
// CoreDNS's "unknown directive" error.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }

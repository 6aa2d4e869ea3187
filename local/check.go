package local

import (
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/node"
)

// Check reports the first value of cfg that is wrong as written, named by
// the `podgate run` flag that sets it: a negative replica count, a domain
// or node name Kubernetes would refuse, a probe interval or timeout that
// is not positive, a pod range Options.PodCIDR refuses, an address of an
// unauthenticated server off loopback. What depends on the world (a
// manifest, an address in use, an image's path) is Run's to find.
func (cfg Config) Check() error {
	if cfg.Replicas != nil && *cfg.Replicas < 0 {
		return fmt.Errorf("--replicas %d: must not be negative", *cfg.Replicas)
	}
	if errs := apivalidation.IsDNS1123Subdomain(cfg.Domain); len(errs) > 0 {
		return fmt.Errorf("--domain %q: %s", cfg.Domain, strings.Join(errs, "; "))
	}
	if cfg.NodeName != "" {
		if errs := apivalidation.IsDNS1123Subdomain(cfg.NodeName); len(errs) > 0 {
			return fmt.Errorf("--node-name %q: %s", cfg.NodeName, strings.Join(errs, "; "))
		}
	}
	if cfg.ProbeInterval <= 0 || cfg.ProbeTimeout <= 0 {
		return fmt.Errorf("--gate-probe-interval and --gate-probe-timeout must be positive (got %s and %s)", cfg.ProbeInterval, cfg.ProbeTimeout)
	}
	if err := node.CheckPodCIDR(cfg.PodCIDR); err != nil {
		return err
	}
	type addrFlag struct{ flag, addr, example string }
	addrs := []addrFlag{{"--api", cfg.APIAddr, apiserver.DefaultAddr}, {"--listen", cfg.Listen, contract.FrontDoorAddr}}
	if cfg.MetricsListen != "" {
		addrs = append(addrs, addrFlag{"--metrics-listen", cfg.MetricsListen, "127.0.0.1:9090"})
	}
	for _, a := range addrs {
		if _, err := loopback.Check(a.addr); err != nil {
			return fmt.Errorf("%s %q: %w (e.g. %s; port 0 picks a free one)", a.flag, a.addr, err, a.example)
		}
	}
	return nil
}

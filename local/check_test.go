package local

import (
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/node"
)

func TestCheckNamesTheFlagOfWhatIsWrongAsWritten(t *testing.T) {
	valid := func() Config {
		return Config{PodCIDR: node.DefaultPodCIDR, APIAddr: apiserver.DefaultAddr, Listen: contract.FrontDoorAddr,
			Domain: activator.DefaultDomain, ProbeInterval: time.Second, ProbeTimeout: time.Second}
	}
	negative := int32(-1)
	for _, tc := range []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"the defaults are fine", func(*Config) {}, ""},
		{"metrics on loopback are fine", func(c *Config) { c.MetricsListen = "127.0.0.1:0" }, ""},
		{"a negative replica count", func(c *Config) { c.Replicas = &negative }, "--replicas -1: must not be negative"},
		{"a domain that is no DNS name", func(c *Config) { c.Domain = "Not A Domain" }, `--domain "Not A Domain"`},
		{"a node name that is no DNS name", func(c *Config) { c.NodeName = "my_laptop" }, `--node-name "my_laptop"`},
		{"a probe interval of zero", func(c *Config) { c.ProbeInterval = 0 }, "--gate-probe-interval and --gate-probe-timeout must be positive"},
		{"a negative probe timeout", func(c *Config) { c.ProbeTimeout = -time.Second }, "--gate-probe-interval and --gate-probe-timeout must be positive"},
		{"a pod range off loopback", func(c *Config) { c.PodCIDR = "10.0.0.0/24" }, "inside 127.0.0.0/8"},
		{"a control API off loopback", func(c *Config) { c.APIAddr = "0.0.0.0:9700" }, `--api "0.0.0.0:9700": 0.0.0.0 is not a loopback address`},
		{"a front door without a port", func(c *Config) { c.Listen = "127.0.0.1" }, `--listen "127.0.0.1": want HOST:PORT`},
		{"metrics off loopback", func(c *Config) { c.MetricsListen = "10.0.0.1:9090" }, `--metrics-listen "10.0.0.1:9090": 10.0.0.1 is not a loopback address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Check()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

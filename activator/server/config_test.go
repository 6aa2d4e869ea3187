package server

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		host, namespace, name string
		ok                    bool
	}{
		{"web.shop.example.com", "shop", "web", true},
		{"WEB.Shop.EXAMPLE.com", "shop", "web", true},
		{"web.shop.example.com:8080", "shop", "web", true},
		{"web.shop.example.com.", "shop", "web", true},
		{"web-2.shop-1.example.com", "shop-1", "web-2", true},
		{"web.shop.example.org", "", "", false},
		{"web.example.com", "", "", false},
		{"a.web.shop.example.com", "", "", false},
		{".shop.example.com", "", "", false},
		{"web..example.com", "", "", false},
		{"we_b.shop.example.com", "", "", false},
		{"-web.shop.example.com", "", "", false},
		{"web.shopexample.com", "", "", false},
		{"example.com", "", "", false},
		{"", "", "", false},
	} {
		ns, name, ok := parseHost(tc.host, "example.com")
		if ns != tc.namespace || name != tc.name || ok != tc.ok {
			t.Errorf("parseHost(%q) = %q, %q, %v; want %q, %q, %v", tc.host, ns, name, ok, tc.namespace, tc.name, tc.ok)
		}
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"a listen address without a port", Config{Listen: "127.0.0.1"}, `listen: Invalid value: "127.0.0.1"`},
		{"a metrics port out of range", Config{MetricsListen: ":70000"}, `metricsListen: Invalid value: ":70000": port must be a number from 0 to 65535`},
		{"a domain that is no DNS name", Config{Domain: "Example_.com"}, `domain: Invalid value: "Example_.com"`},
		{"a namespace that is no DNS label", Config{Namespace: "Shop"}, `namespace: Invalid value: "Shop"`},
		{"a gate port out of range", Config{GatePort: 70000}, "gatePort: Invalid value: 70000"},
		{"a negative queue", Config{QueueDepth: -1}, "queueDepth: Invalid value: -1"},
		{"a negative timeout", Config{RequestTimeout: -time.Second}, "requestTimeout: Invalid value: -1s"},
		{"a negative idle timeout", Config{IdleTimeout: -time.Second}, "idleTimeout: Invalid value: -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v, want %q", err, tc.want)
			}
			tc.cfg.Rest = &rest.Config{Host: "https://127.0.0.1:1"}
			if _, err := Start(t.Context(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start = %v, want %q", err, tc.want)
			}
		})
	}
	if err := (Config{}).Check(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
	if _, err := Start(t.Context(), Config{}); err == nil || !strings.Contains(err.Error(), "no API server configuration") {
		t.Errorf("Start without Rest: %v", err)
	}
}

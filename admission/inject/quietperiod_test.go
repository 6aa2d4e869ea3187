package inject

import (
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

func TestTheQuietPeriodAnnotationSetsTheGatesQuietPeriod(t *testing.T) {
	annotated := func(v string) string {
		return strings.Replace(podWith(""), "metadata: {name: p}", "metadata: {name: p, annotations: {podgate.dev/drain-quiet-period: \""+v+"\"}}", 1)
	}
	for _, tc := range []struct {
		name     string
		manifest string
		want     time.Duration
	}{
		{"no annotation: half the default 30 s grace period", podWith(""), 15 * time.Second},
		{"5s", annotated("5s"), 5 * time.Second},
		{"0s ends the drain once nothing is in flight", annotated("0s"), 0},
		{"longer than the default half, inside the grace period", annotated("25s"), 25 * time.Second},
		{"a Knative Service's template annotation", strings.Replace(ksvc("      - {image: i}\n"), "  template:\n", "  template:\n    metadata: {annotations: {podgate.dev/drain-quiet-period: 2s}}\n", 1), 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg := injected(t, tc.manifest, Options{})
			if cfg.DrainQuietPeriod != tc.want {
				t.Errorf("%s = %v, want %v", contract.EnvDrainQuietPeriod, cfg.DrainQuietPeriod, tc.want)
			}
		})
	}
}

func TestOnlyRouterIsWrittenOnlyWhenTheInjectorIsTold(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"on a cluster by default: routers unknown", Options{}, ""},
		{"on a cluster whose only router is podgate's activator (webhook --only-router)", Options{OnlyRouter: contract.OnlyRouterActivator}, contract.OnlyRouterActivator},
		{"locally: podgate run's front door", Options{Local: true}, contract.OnlyRouterActivator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg := injected(t, podWith(""), tc.opts)
			if cfg.OnlyRouter != tc.want {
				t.Errorf("%s = %q, want %q", contract.EnvOnlyRouter, cfg.OnlyRouter, tc.want)
			}
		})
	}
}

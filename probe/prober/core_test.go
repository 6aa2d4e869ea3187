package prober

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestCounterThresholds(t *testing.T) {
	const P, F = true, false
	for _, tt := range []struct {
		name             string
		success, failure int
		results          []bool
		want             []State
	}{
		{"failure at threshold publishes Failure", 1, 3,
			[]bool{F, F, F, F}, []State{Unknown, Unknown, Failure, Failure}},
		{"a success breaks a failure streak", 1, 3,
			[]bool{F, F, P, F, F}, []State{Unknown, Unknown, Success, Unknown, Unknown}},
		{"success threshold needs consecutive passes", 3, 1,
			[]bool{P, P, F, P, P, P}, []State{Unknown, Unknown, Failure, Unknown, Unknown, Success}},
		{"threshold 1 decides every result", 1, 1,
			[]bool{P, F, P}, []State{Success, Failure, Success}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Counter
			for i, r := range tt.results {
				if got := c.Observe(r, tt.success, tt.failure); got != tt.want[i] {
					t.Fatalf("result %d (passed=%v): got %v, want %v", i, r, got, tt.want[i])
				}
			}
		})
	}
}

func TestCounterResetStartsAFreshStreak(t *testing.T) {
	var c Counter
	c.Observe(false, 1, 2)
	c.Reset()
	if got := c.Observe(false, 1, 2); got != Unknown {
		t.Fatalf("first failure after Reset = %v, want Unknown", got)
	}
	if n, passed := c.Streak(); n != 1 || passed {
		t.Fatalf("Streak() = %d, %v; want 1, false", n, passed)
	}
}

func TestNextTickKeepsAFixedRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const period = 10 * time.Second
	for _, tt := range []struct {
		name string
		now  time.Duration // after the anchor
		want time.Duration
	}{
		{"before the anchor the anchor is next", -time.Second, 0},
		{"at the anchor the next point follows", 0, period},
		{"a fast probe waits for the next point", 300 * time.Millisecond, period},
		{"a probe ending on a point waits a whole period", period, 2 * period},
		{"a slow probe drops the ticks it overran", 25 * time.Second, 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextTick(t0, period, t0.Add(tt.now)); !got.Equal(t0.Add(tt.want)) {
				t.Fatalf("NextTick(now=anchor%+v) = anchor%+v, want anchor%+v", tt.now, got.Sub(t0), tt.want)
			}
		})
	}
}

func TestFirstTickIsTheInitialDelayNotTheNextTick(t *testing.T) {
	started := time.Unix(1000, 0)
	for _, tt := range []struct {
		name     string
		delay    time.Duration
		earliest time.Duration // after started
		want     time.Duration
	}{
		{"no delay: at once", 0, 0, 0},
		{"delay not yet passed: when it passes", 5 * time.Second, time.Second, 5 * time.Second},
		{"delay already passed (agent restarted): at once", 5 * time.Second, 7 * time.Second, 7 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstTick(started, tt.delay, started.Add(tt.earliest)); !got.Equal(started.Add(tt.want)) {
				t.Fatalf("FirstTick = started%+v, want started%+v", got.Sub(started), tt.want)
			}
		})
	}
}

func TestTimingDefaults(t *testing.T) {
	for _, tt := range []struct {
		name           string
		probe          corev1.Probe
		knative        bool
		want           Config
		wantAggressive bool
	}{
		{"zero fields get Kubernetes' defaults", corev1.Probe{}, false,
			Config{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}, false},
		{"Knative periodSeconds 0 is aggressive with a 1 s steady period", corev1.Probe{}, true,
			Config{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}, true},
		{"Knative with a period set is not aggressive", corev1.Probe{PeriodSeconds: 4}, true,
			Config{Period: 4 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}, false},
		{"set fields are kept", corev1.Probe{InitialDelaySeconds: 2, PeriodSeconds: 3, TimeoutSeconds: 4, SuccessThreshold: 5, FailureThreshold: 6}, false,
			Config{InitialDelay: 2 * time.Second, Period: 3 * time.Second, Timeout: 4 * time.Second, SuccessThreshold: 5, FailureThreshold: 6}, false},
		{"negative values count as unset", corev1.Probe{InitialDelaySeconds: -1, TimeoutSeconds: -1}, false,
			Config{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, aggressive := Timing(&tt.probe, tt.knative)
			if got.InitialDelay != tt.want.InitialDelay || got.Period != tt.want.Period || got.Timeout != tt.want.Timeout ||
				got.SuccessThreshold != tt.want.SuccessThreshold || got.FailureThreshold != tt.want.FailureThreshold || aggressive != tt.wantAggressive {
				t.Fatalf("Timing = %+v, aggressive %v; want %+v, aggressive %v", got, aggressive, tt.want, tt.wantAggressive)
			}
		})
	}
}

func TestSetDefaultsFillsOnlyZeroFields(t *testing.T) {
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}, PeriodSeconds: 2}
	SetDefaults(p)
	if p.PeriodSeconds != 2 || p.TimeoutSeconds != 1 || p.SuccessThreshold != 1 || p.FailureThreshold != 3 ||
		p.HTTPGet.Path != "/" || p.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Fatalf("SetDefaults = %+v (httpGet %+v)", p, p.HTTPGet)
	}
	SetDefaults(nil) // must not panic
}

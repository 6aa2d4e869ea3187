package gatemain

import (
	"testing"

	"github.com/podgate/podgate/gate/contract"
)

func TestListenHost(t *testing.T) {
	for _, tc := range []struct {
		name         string
		servingPodIP string
		podIP        string
		want         string
	}{
		{"a local pod's loopback address is listened on", "127.0.1.3", "", "127.0.1.3"},
		{"POD_IP counts when SERVING_POD_IP is unset", "", "127.0.1.4", "127.0.1.4"},
		{"a Kubernetes pod IP means every interface", "10.42.0.29", "", ""},
		{"no pod IP means every interface", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := contract.Config{PodIP: tc.servingPodIP}
			got, err := ListenHost(cfg, func(k string) string {
				if k == "POD_IP" {
					return tc.podIP
				}
				return ""
			})
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTheRequestLogFlagBeatsKnativesSwitches(t *testing.T) {
	t.Parallel()
	on, off := true, false
	for _, tc := range []struct {
		name    string
		flag    *bool
		env     string
		obs     bool // OBSERVABILITY_CONFIG's enableRequestLog
		want    bool
		wantErr string
	}{
		{"off by default", nil, "", false, false, ""},
		{"the old switch turns it on", nil, "true", false, true, ""},
		{"OBSERVABILITY_CONFIG turns it on", nil, "", true, true, ""},
		{"either switch turns it on", nil, "false", true, true, ""},
		{"the flag beats the switches", &off, "true", true, false, ""},
		{"the flag alone", &on, "", false, true, ""},
		{"a switch that is no boolean names the variable", nil, "maybe", false, false, `SERVING_ENABLE_REQUEST_LOG: "maybe" is not true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{RequestLog: tc.flag, LookupEnv: func(k string) (string, bool) {
				if k == EnvEnableRequestLog && tc.env != "" {
					return tc.env, true
				}
				return "", false
			}}
			got, err := c.requestLog(contract.Observability{EnableRequestLog: tc.obs})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("requestLog = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

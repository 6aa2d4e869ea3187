package kube

import "testing"

func TestTheNodesPodCapacity(t *testing.T) {
	for _, c := range []struct {
		name    string
		cidr    string
		maxPods int
		want    string
	}{
		{"the kubelet's default of 110 when the range holds more", "127.3.0.0/24", 0, "110"},
		{"--max-pods above the default", "127.3.0.0/23", 300, "300"},
		{"the range's size bounds --max-pods", "127.3.0.0/24", 300, "254"},
		{"--max-pods below the default", "127.3.0.0/24", 5, "5"},
		{"a small range bounds the default", "127.3.0.0/28", 0, "14"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := nodeObject(Config{NodeName: "n", PodCIDR: c.cidr, MaxPods: c.maxPods})
			if got := n.Status.Capacity.Pods().String(); got != c.want {
				t.Errorf("capacity pods = %s, want %s", got, c.want)
			}
			if got := n.Status.Allocatable.Pods().String(); got != c.want {
				t.Errorf("allocatable pods = %s, want %s", got, c.want)
			}
		})
	}
}

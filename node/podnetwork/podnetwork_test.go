package podnetwork

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/podgate/podgate/node/loopnet"
)

// TestLoopbackIsTheLoopnetNetworkAsAPodNetwork: addresses come from the
// range and go back to it on Close, Enter is a plain call, and the range
// running out is an error.
func TestLoopbackIsTheLoopnetNetworkAsAPodNetwork(t *testing.T) {
	t.Parallel()
	const cidr = "127.0.7.0/30" // two pods: .1 and .2
	for _, tc := range []struct {
		name    string
		pods    int  // added, in order, each with its own key
		closeAt int  // close the pod added this (1-based) before the last Add, 0: none
		wantErr bool // the last Add fails
	}{
		{"one pod gets an address of the range", 1, 0, false},
		{"the range holds two pods", 2, 0, false},
		{"a third one finds it full", 3, 0, true},
		{"a closed pod's address serves the next one", 3, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := loopnet.New(cidr)
			if err != nil {
				t.Fatal(err)
			}
			net := Loopback(n)
			if pods, prefix := net.Capacity(); pods != 2 || prefix != netip.MustParsePrefix(cidr) {
				t.Fatalf("Capacity = %d, %s; want 2, %s", pods, prefix, cidr)
			}
			var added []Pod
			for i := range tc.pods {
				if i == tc.pods-1 && tc.closeAt > 0 {
					if err := added[tc.closeAt-1].Close(); err != nil {
						t.Fatal(err)
					}
				}
				p, err := net.Add(string(rune('a' + i)))
				if i == tc.pods-1 && tc.wantErr {
					if err == nil {
						t.Fatalf("Add %d = %s, want the range to have run out", i+1, p.IP())
					}
					return
				}
				if err != nil {
					t.Fatalf("Add %d: %v", i+1, err)
				}
				if !netip.MustParsePrefix(cidr).Contains(p.IP()) {
					t.Fatalf("Add %d: address %s outside %s", i+1, p.IP(), cidr)
				}
				added = append(added, p)
			}
			called := errors.New("fn ran")
			if err := added[0].Enter(func() error { return called }); err != called {
				t.Fatalf("Enter = %v, want fn's own result", err)
			}
		})
	}
}

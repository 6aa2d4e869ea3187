package loopnet

import (
	"strings"
	"testing"
)

func TestIPAM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cidr, wantErr string }{
		{"10.0.0.0/24", "inside 127.0.0.0/8"},
		{"127.0.1.0/31", "too small"},
		{"::1/128", "inside 127.0.0.0/8"},
		{"127.0.1.0", "--pod-cidr"},
	} {
		if _, err := newIPAM(tc.cidr); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("newIPAM(%q) = %v, want %q", tc.cidr, err, tc.wantErr)
		}
	}
	m, err := newIPAM("127.0.0.0/30")
	if err != nil {
		t.Fatal(err)
	}
	// 127.0.0.1 is everyone's localhost; .3 is the broadcast address.
	a, err := m.allocate("a")
	if err != nil || a.String() != "127.0.0.2" {
		t.Fatalf("first = %v, %v; want 127.0.0.2 (127.0.0.1 skipped)", a, err)
	}
	if _, err := m.allocate("b"); err == nil || !strings.Contains(err.Error(), "no free pod IP") {
		t.Fatalf("second allocation = %v, want exhausted", err)
	}
	m.release(a)
	if b, err := m.allocate("b"); err != nil || b != a {
		t.Fatalf("after release = %v, %v", b, err)
	}

	r, _ := newIPAM("127.0.9.0/29")
	x, _ := r.allocate("x")
	y, _ := r.allocate("y")
	r.release(x)
	// Round robin: a released address is reused last.
	if z, _ := r.allocate("z"); z == x || z == y {
		t.Errorf("allocated %s right after releasing it", z)
	}
}

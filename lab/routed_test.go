package lab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/lab"
)

// WaitRouted waits for a route the front door adds later, and the check
// reaches no service; a route that never comes fails with the answer seen.
func TestWaitRoutedWaitsForTheFrontDoorToRouteTheHost(t *testing.T) {
	rt := activator.NewRouter("")
	door := httptest.NewServer(rt)
	defer door.Close()
	var served atomic.Int64
	go func() {
		time.Sleep(100 * time.Millisecond)
		rt.Set("ns", "late", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := lab.WaitRouted(ctx, door.URL, "late.ns.example.com"); err != nil {
		t.Fatal(err)
	}
	if n := served.Load(); n != 0 {
		t.Errorf("the service served %d route checks, want 0", n)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	err := lab.WaitRouted(short, door.URL, "never.ns.example.com")
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a host never routed: %v, want a timeout naming the 404", err)
	}
}

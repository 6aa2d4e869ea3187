package server

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/syncbuf"
)

// With fixed routes (`podgate run`), the same server serves the routes it
// was given and nothing else, each with its target from the start.
func TestFixedRoutesServeTheirServicesOnly(t *testing.T) {
	e := sharedEnv(t)
	c := client(t)
	clk := clocktesting.NewFakeClock(time.Now())
	var announce syncbuf.Buffer
	sp, err := ParseServicePort(testNS + "/front=0")
	if err != nil {
		t.Fatal(err)
	}
	s, stop, err := e.startActivator(Config{
		// A route's name need not be its Service's: a Knative Service's
		// pods belong to its revision's Service.
		Routes:       []Route{{Namespace: testNS, Name: "front", Service: service, Label: "Service/front"}},
		ServicePorts: []ServicePort{sp},
		OnlyRouter:   true,
		Announce:     &announce,
		Clock:        clk,
		IdleTimeout:  time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const frontHost = "front." + testNS + ".example.com"

	var curls strings.Builder
	s.PrintCurls(&curls)
	ownPort := regexp.MustCompile(`curl http://(127\.0\.0\.1:\d+)/ +# Service/front on its own port`).FindStringSubmatch(curls.String())

	t.Run("the route's target exists before its first request", func(t *testing.T) {
		if _, open := s.Status(testNS, "front"); !open || s.Targets() != 1 {
			t.Errorf("target open %v, %d targets; want the route's one target at start", open, s.Targets())
		}
	})

	t.Run("curl lines name the route's host and its own port", func(t *testing.T) {
		want := "curl -H 'Host: " + frontHost + "' http://" + s.Addr().String() + "/    # Service/front"
		if !strings.Contains(curls.String(), want) || ownPort == nil {
			t.Errorf("curl lines:\n%s\nwant %q and a line for the route's own port", curls.String(), want)
		}
	})

	t.Run("the route's host reaches its Service's pods", func(t *testing.T) {
		got := answers(t, c, s, frontHost, 20)
		if got["web-a"] == 0 || got["web-b"] == 0 {
			t.Errorf("answers %v, want both pods of Service web", got)
		}
	})

	t.Run("one ready line follows the curl lines once the route takes traffic", func(t *testing.T) {
		ready := regexp.MustCompile(`^podgate: front\.` + testNS + ` is ready \([12]/2 pods\): curl -H 'Host: ` + regexp.QuoteMeta(frontHost) + `' http://` + regexp.QuoteMeta(s.Addr().String()) + `/\n$`)
		if err := poll(time.Minute, func() (bool, error) {
			return ready.MatchString(announce.String()), nil
		}); err != nil {
			t.Errorf("announced %q: %v", announce.String(), err)
		}
	})

	t.Run("the route's own port serves it whatever the Host", func(t *testing.T) {
		if ownPort == nil {
			t.Fatalf("no curl line for the route's own port in:\n%s", curls.String())
		}
		for _, h := range []string{"", "anything.example.org"} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+ownPort[1]+"/", nil)
			req.Host = h
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("own port, Host %q: %s, want 200", h, resp.Status)
			}
		}
	})

	t.Run("a Service that is not a route gets 404 and no target", func(t *testing.T) {
		for _, h := range []string{host, "nothing." + testNS + ".example.com", "not-a-route"} {
			if code, body, err := get(c, s, h); err != nil || code != http.StatusNotFound {
				t.Errorf("Host %q: %d %q %v, want 404", h, code, body, err)
			}
		}
		if n := s.Targets(); n != 1 {
			t.Errorf("%d targets, want only the route's", n)
		}
	})

	t.Run("a route is never closed for idleness", func(t *testing.T) {
		// The idle sweep is the clock's only user: with fixed routes none
		// runs, so nothing waits on the clock.
		if clk.HasWaiters() {
			t.Error("an idle sweep waits on the clock")
		}
		clk.Step(time.Hour)
		if _, open := s.Status(testNS, "front"); !open {
			t.Error("the route's target closed after an idle hour")
		}
		if code, body, err := get(c, s, frontHost); err != nil || code != http.StatusOK {
			t.Errorf("after an idle hour: %d %q %v, want 200", code, body, err)
		}
	})
}

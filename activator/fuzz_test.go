package activator

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzRouterHost: any Host header is answered without panicking, only the
// service's own host finds it, and case and a port never change where a
// host goes.
func FuzzRouterHost(f *testing.F) {
	for _, s := range []string{"hello.default.example.com", "Hello.Default.Example.COM.", "[::1]:80", ":", "", "a..b", "x.y.example.com:notaport"} {
		f.Add(s)
	}
	rt := NewRouter("")
	rt.Set("default", "hello", http.NotFoundHandler())
	f.Fuzz(func(t *testing.T, host string) {
		_, found := rt.Handler(host)
		if found && normalizeHost(host) != "hello.default.example.com" {
			t.Fatalf("%q routed to hello.default", host)
		}
		if strings.ContainsAny(host, ":[]") {
			return // already carries a port or an IPv6 literal
		}
		if _, same := rt.Handler(strings.ToUpper(host) + ":8080"); same != found {
			t.Fatalf("%q found=%v, but with upper case and a port found=%v", host, found, same)
		}
	})
}

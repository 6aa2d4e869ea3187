package lab

import (
	"strings"
	"testing"
)

func TestOutputKeepsTheNewestBytes(t *testing.T) {
	o := NewOutput()
	line := strings.Repeat("x", 1023) + "\n"
	for range maxOutput / len(line) {
		_, _ = o.Write([]byte(line))
	}
	if got := o.String(); strings.Contains(got, "dropped") || len(got) != maxOutput {
		t.Fatalf("at the cap: %d bytes, dropped note %t", len(got), strings.Contains(got, "dropped"))
	}
	_, changed := o.Snapshot()
	_, _ = o.Write([]byte("the end\n"))
	select {
	case <-changed:
	default:
		t.Error("a write did not signal the change")
	}
	got := o.String()
	if !strings.HasPrefix(got, "[… ") || !strings.HasSuffix(got, "the end\n") || len(got) > maxOutput {
		t.Errorf("past the cap: %d bytes starting %q, ending %q", len(got), got[:40], got[len(got)-10:])
	}
}

func TestParseAddresses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stderr   string
		want     addresses
		complete bool
	}{
		{"nothing yet", "time=… level=INFO msg=starting\n", addresses{}, false},
		{"the control API alone is not enough", "podgate: control API on http://127.0.0.1:9700 (podgate get pods --api 127.0.0.1:9700)\n",
			addresses{api: "127.0.0.1:9700"}, false},
		{"the front door completes it, with its routes", `podgate: control API on http://127.0.0.1:41000 (podgate get pods --api 127.0.0.1:41000)
time=… msg="Successfully assigned default/a to vm"
podgate: running Service/a (namespace default, …)
podgate: front door on http://127.0.0.1:42000 (routes by Host: NAME.NAMESPACE.example.com)
podgate: curl -H 'Host: a.default.example.com' http://127.0.0.1:42000/
podgate: curl -H 'Host: b.shop.example.com' http://127.0.0.1:42000/
`, addresses{api: "127.0.0.1:41000", door: "127.0.0.1:42000", routes: []string{"a.default.example.com", "b.shop.example.com"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, complete := parseAddresses(tc.stderr)
			if complete != tc.complete || got.api != tc.want.api || got.door != tc.want.door || strings.Join(got.routes, ",") != strings.Join(tc.want.routes, ",") {
				t.Errorf("parseAddresses = %+v, %t; want %+v, %t", got, complete, tc.want, tc.complete)
			}
		})
	}
}

func TestAChattyPodCannotPushOutAnotherPodsLines(t *testing.T) {
	o := NewPodOutput()
	// Split mid-line: exec.Cmd copies chunks, not lines.
	_, _ = o.Write([]byte("victim/podgate | time=2026-11-29T01:18:08Z msg=\"drai"))
	_, _ = o.Write([]byte("ned: confirmed\"\nno prefix at all\n"))
	noise := []byte("activator-1/activator | " + strings.Repeat("x", 1000) + "\n")
	for range 3 * maxOutput / len(noise) {
		_, _ = o.Write(noise)
	}
	_, _ = o.Write([]byte("victim/app | time=2026-11-29T01:18:09Z msg=\"termination requested\"\nvictim/app | unfinished"))
	got := o.String()
	for _, want := range []string{
		"victim/podgate | time=2026-11-29T01:18:08Z msg=\"drained: confirmed\"\n",
		"no prefix at all\n",
		"victim/app | time=2026-11-29T01:18:09Z msg=\"termination requested\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lost %q", want)
		}
	}
	if !strings.HasSuffix(got, "victim/app | unfinished") {
		t.Errorf("the unfinished line is not last: …%q", got[len(got)-40:])
	}
	if !strings.Contains(got, "earlier bytes dropped") || len(got) > maxOutput+1000 {
		t.Errorf("the chatty pod was not capped on its own: %d bytes", len(got))
	}
}

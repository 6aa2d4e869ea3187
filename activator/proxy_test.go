package activator

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestProxyKeepsHostAndForwardsClient(t *testing.T) {
	got := make(chan *http.Request, 1)
	h := newHarness(t, Config{})
	a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
	}))
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)

	tests := []struct {
		name              string
		in                map[string]string
		wantXFF, wantHost string
		wantProto         string
	}{
		{name: "direct client: X-Forwarded-* set from the connection",
			wantXFF: "127.0.0.1", wantHost: "svc.ns.example.com", wantProto: "http"},
		{name: "behind another proxy: chain extended, its host and proto kept",
			in:      map[string]string{"X-Forwarded-For": "10.0.0.9", "X-Forwarded-Host": "public.example", "X-Forwarded-Proto": "https"},
			wantXFF: "10.0.0.9, 127.0.0.1", wantHost: "public.example", wantProto: "https"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/p?q=1", nil)
			req.Host = "svc.ns.example.com"
			for k, v := range tc.in {
				req.Header.Set(k, v)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			r := <-got
			if r.Host != "svc.ns.example.com" {
				t.Errorf("Host %q, want the client's", r.Host)
			}
			if r.URL.RequestURI() != "/p?q=1" {
				t.Errorf("URI %q", r.URL.RequestURI())
			}
			if v := r.Header.Get("X-Forwarded-For"); v != tc.wantXFF {
				t.Errorf("X-Forwarded-For %q, want %q", v, tc.wantXFF)
			}
			if v := r.Header.Get("X-Forwarded-Host"); v != tc.wantHost {
				t.Errorf("X-Forwarded-Host %q, want %q", v, tc.wantHost)
			}
			if v := r.Header.Get("X-Forwarded-Proto"); v != tc.wantProto {
				t.Errorf("X-Forwarded-Proto %q, want %q", v, tc.wantProto)
			}
		})
	}
}

func TestProxyStreams(t *testing.T) {
	h := newHarness(t, Config{})
	next := make(chan struct{})
	a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 3; i++ {
			_, _ = io.WriteString(w, "chunk\n")
			w.(http.Flusher).Flush()
			<-next // the client must see this chunk before the next is written
		}
	}))
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	resp, err := h.client.Get(h.front.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ {
		line, err := rd.ReadString('\n')
		if err != nil || line != "chunk\n" {
			t.Fatalf("chunk %d: %q %v", i, line, err)
		}
		next <- struct{}{}
	}
}

func TestProxyUpgrades(t *testing.T) {
	h := newHarness(t, Config{})
	a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		line, _ := brw.ReadString('\n')
		_, _ = io.WriteString(conn, strings.ToUpper(line))
	}))
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)

	conn, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	_, _ = io.WriteString(conn, "hello\n")
	if line, err := br.ReadString('\n'); err != nil || line != "HELLO\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
}

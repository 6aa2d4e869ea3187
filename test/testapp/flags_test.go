package testapp_test

import (
	"flag"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/test/testapp"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func parseFlags(t *testing.T, args []string) testapp.Flags {
	t.Helper()
	var f testapp.Flags
	fs := flag.NewFlagSet("testapp", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return f
}

func TestFlagsConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    testapp.Config // compared on the fields below
		wantErr string
	}{
		{name: "--port on the default address",
			args: []string{"--port", "8080"},
			want: testapp.Config{Addr: "127.0.0.1:8080", Name: "testapp"}},
		{name: "$PORT when --port is absent",
			env:  map[string]string{"PORT": "9000"},
			want: testapp.Config{Addr: "127.0.0.1:9000", Name: "testapp"}},
		{name: "--port wins over $PORT",
			args: []string{"--port=8081"}, env: map[string]string{"PORT": "9000"},
			want: testapp.Config{Addr: "127.0.0.1:8081", Name: "testapp"}},
		{name: "port 0 picks a free port",
			args: []string{"--port", "0"},
			want: testapp.Config{Addr: "127.0.0.1:0", Name: "testapp"}},
		{name: "binds $POD_IP",
			args: []string{"--port", "8080", "--grpc-port", "8090"}, env: map[string]string{"POD_IP": "127.0.1.7"},
			want: testapp.Config{Addr: "127.0.1.7:8080", GRPCAddr: "127.0.1.7:8090", Name: "testapp"}},
		{name: "a pod IP of a network of its own binds every address, for the gate at 127.0.0.1 and the node at the pod IP",
			args: []string{"--port", "8080", "--grpc-port", "8090"}, env: map[string]string{"POD_IP": "10.244.0.2"},
			want: testapp.Config{Addr: "0.0.0.0:8080", GRPCAddr: "0.0.0.0:8090", Name: "testapp"}},
		{name: "an IPv6 pod IP of a network of its own binds every address",
			args: []string{"--port", "8080"}, env: map[string]string{"POD_IP": "fd00::2"},
			want: testapp.Config{Addr: "[::]:8080", Name: "testapp"}},
		{name: "an IPv6 $POD_IP is bracketed",
			args: []string{"--port", "8080"}, env: map[string]string{"POD_IP": "::1"},
			want: testapp.Config{Addr: "[::1]:8080", Name: "testapp"}},
		{name: "name defaults to $HOSTNAME",
			args: []string{"--port", "1"}, env: map[string]string{"HOSTNAME": "runtime-00001-deployment-abc"},
			want: testapp.Config{Addr: "127.0.0.1:1", Name: "runtime-00001-deployment-abc"}},
		{name: "--name wins over $HOSTNAME",
			args: []string{"--port", "1", "--name", "first-container"}, env: map[string]string{"HOSTNAME": "h"},
			want: testapp.Config{Addr: "127.0.0.1:1", Name: "first-container"}},
		{name: "durations and exec file carry over",
			args: []string{"--port", "1", "--ready-after", "3s", "--fail-live-after", "10s",
				"--sleep-on-term", "5s", "--exec-file", "/tmp/healthy"},
			want: testapp.Config{Addr: "127.0.0.1:1", Name: "testapp", ReadyAfter: 3 * time.Second,
				FailLiveAfter: 10 * time.Second, SleepOnTerm: 5 * time.Second, ExecFile: "/tmp/healthy"}},
		{name: "no port at all is a usage error naming both sources",
			wantErr: "no HTTP port: pass --port or set $PORT"},
		{name: "a non-numeric --port names the flag",
			args: []string{"--port", "http"}, wantErr: `invalid --port "http"`},
		{name: "a bad $PORT names the variable",
			env: map[string]string{"PORT": "70000"}, wantErr: `invalid $PORT "70000"`},
		{name: "a negative --grpc-port",
			args: []string{"--port", "1", "--grpc-port", "-1"}, wantErr: `invalid --grpc-port "-1"`},
		{name: "grpc and HTTP on one port",
			args: []string{"--port", "8080", "--grpc-port", "8080"}, wantErr: "--grpc-port 8080 is the HTTP port too"},
		{name: "a bad $POD_IP",
			args: []string{"--port", "1"}, env: map[string]string{"POD_IP": "pod.local"}, wantErr: `invalid $POD_IP "pod.local"`},
		{name: "a negative --ready-after",
			args: []string{"--port", "1", "--ready-after", "-1s"}, wantErr: "invalid --ready-after -1s"},
		{name: "a negative --sleep-on-term",
			args: []string{"--port", "1", "--sleep-on-term", "-2s"}, wantErr: "invalid --sleep-on-term -2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parseFlags(t, tc.args)
			got, err := f.Config(envOf(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Config() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Config() = %v", err)
			}
			if got.Clock == nil {
				t.Error("Config() left Clock nil")
			}
			got.Clock = nil
			if got != tc.want {
				t.Errorf("Config() = %+v\nwant       %+v", got, tc.want)
			}
		})
	}
}

// FuzzFlagsConfig: whatever the flags and environment say, Config either
// errors or yields addresses that parse, on an IP, with a valid port.
func FuzzFlagsConfig(f *testing.F) {
	f.Add("8080", "", "", "", "")
	f.Add("", "9090", "9000", "127.0.1.3", "x")
	f.Add("0", "0", "", "::1", "")
	f.Add("+1", "-0", "0x10", "1.2.3", "")
	f.Fuzz(func(t *testing.T, port, grpcPort, envPort, podIP, hostname string) {
		flags := testapp.Flags{Port: port, GRPCPort: grpcPort}
		cfg, err := flags.Config(envOf(map[string]string{"PORT": envPort, "POD_IP": podIP, "HOSTNAME": hostname}))
		if err != nil {
			return
		}
		for _, addr := range []string{cfg.Addr, cfg.GRPCAddr} {
			if addr == "" {
				continue
			}
			host, p, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("address %q does not split: %v", addr, err)
			}
			if net.ParseIP(host) == nil {
				t.Fatalf("address %q: host is not an IP", addr)
			}
			if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
				t.Fatalf("address %q: bad port", addr)
			}
		}
		if cfg.Name == "" {
			t.Fatal("empty name")
		}
	})
}

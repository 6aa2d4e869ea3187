package leftovers

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const childEnv = "LEFTOVERS_TEST_CHILD"

func TestMain(m *testing.M) {
	// The child: a test binary of its own whose tests leave (or do not
	// leave) a file and a directory behind.
	if what := os.Getenv(childEnv); what != "" {
		check := Isolate()
		if what == "leave" {
			dir, err := os.MkdirTemp("", "podgate-pod-")
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "resolv.conf"), nil, 0o644)
			}
			if err != nil {
				os.Exit(3)
			}
		}
		check(0)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTheCheckFailsTestsThatLeaveFilesAndRemovesThem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		child    string
		wantCode int
		wantOut  string
	}{
		{"tests that leave nothing pass", "clean", 0, ""},
		{"a directory left by passing tests fails them, named with its contents", "leave", 1, "podgate-pod-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.child, "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tc.wantCode, out)
			}
			if tc.wantOut != "" && (!strings.Contains(string(out), tc.wantOut) || !strings.Contains(string(out), "resolv.conf")) {
				t.Errorf("output does not name %s and its resolv.conf:\n%s", tc.wantOut, out)
			}
			// Whatever was left, the isolated directory itself is gone.
			if left, err := List(tmp); err != nil || len(left) > 0 {
				t.Errorf("left in TMPDIR: %v (%v)", left, err)
			}
		})
	}
}

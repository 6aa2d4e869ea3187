package testapp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/test/testapp"
)

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestExecFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  func(path string) // state left by a previous run
		steps   []req
		present bool // whether the file exists after the steps
	}{
		{"exec file is created at start", nil, nil, true},
		{"a stale exec file is rewritten at start",
			func(p string) { _ = os.WriteFile(p, []byte("stale"), 0o600) }, nil, true},
		{"toggleExec removes the file", nil, []req{
			{"GET", "/toggleExec", 200, "false"},
		}, false},
		{"toggleExec by POST creates it again", nil, []req{
			{"POST", "/toggleExec", 200, "false"},
			{"POST", "/toggleExec", 200, "true"},
		}, true},
		{"set=false removes and stays removed", nil, []req{
			{"GET", "/toggleExec?set=false", 200, "false"},
			{"GET", "/toggleExec?set=false", 200, "false"},
		}, false},
		{"toggleExec refuses PUT and leaves the file", nil, []req{
			{"PUT", "/toggleExec", 405, ""},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "healthy")
			if tc.before != nil {
				tc.before(path)
			}
			s, logs := startApp(t, testapp.Config{ExecFile: path})
			for _, st := range tc.steps {
				expect(t, s, st.method, st.path, st.wantCode, st.wantBody)
			}
			if got := fileExists(path); got != tc.present {
				t.Errorf("exec file exists = %t, want %t", got, tc.present)
			}
			if got := s.ExecFilePresent(); got != tc.present {
				t.Errorf("ExecFilePresent() = %t, want %t", got, tc.present)
			}
			if tc.present {
				if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) == "" || string(b) == "stale" {
					t.Errorf("exec file content = %q, %v; want the app's content", b, err)
				}
			}
			if len(tc.steps) > 0 && tc.steps[0].wantCode == 200 && !strings.Contains(logs.String(), "Exec file ") {
				t.Errorf("logs lack what the exec toggle did:\n%s", logs)
			}
		})
	}
}

func TestExecFileRemovedByHandFlipsBackToPresent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "healthy")
	s, _ := startApp(t, testapp.Config{ExecFile: path})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect(t, s, "GET", "/toggleExec", 200, "true")
	if !fileExists(path) {
		t.Error("exec file missing after toggling a hand-removed file")
	}
}

func TestSetExecFileInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "healthy")
	s, _ := startApp(t, testapp.Config{ExecFile: path})
	if err := s.SetExecFile(false); err != nil || fileExists(path) {
		t.Errorf("SetExecFile(false) = %v, file exists %t; want nil, false", err, fileExists(path))
	}
	if err := s.SetExecFile(true); err != nil || !fileExists(path) {
		t.Errorf("SetExecFile(true) = %v, file exists %t; want nil, true", err, fileExists(path))
	}
	noFile, _ := startApp(t, testapp.Config{})
	if err := noFile.SetExecFile(true); err == nil || !strings.Contains(err.Error(), "--exec-file") {
		t.Errorf("SetExecFile without an exec file = %v, want an error naming --exec-file", err)
	}
}

func TestExecFileInMissingDirFailsStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "healthy")
	s, err := testapp.Start(testapp.Config{ExecFile: path}, nil)
	if err == nil {
		_ = s.Shutdown(t.Context())
		t.Fatal("Start with an exec file in a missing directory succeeded")
	}
	if !strings.Contains(err.Error(), "exec file") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q should say exec file and name %s", err, path)
	}
}

package testapp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// An app removes the exec file it made when it exits, but not one another
// app (a restarted container, a second replica) has written since.
func TestExitRemovesOnlyItsOwnExecFile(t *testing.T) {
	start := func(t *testing.T, path string) *Server {
		t.Helper()
		s, err := Start(Config{Addr: "127.0.0.1:0", ExecFile: path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
		return s
	}
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, path string)
		want bool // the file exists at the end
	}{
		{"the file of an app that exits is removed", func(t *testing.T, path string) {
			start(t, path).removeOwnExecFile()
		}, false},
		{"toggled off and on, it is still the app's own", func(t *testing.T, path string) {
			s := start(t, path)
			if _, err := s.flipExecFile(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.flipExecFile(); err != nil {
				t.Fatal(err)
			}
			s.removeOwnExecFile()
		}, false},
		{"a file another app wrote later is left to it", func(t *testing.T, path string) {
			first := start(t, path)
			start(t, path)
			first.removeOwnExecFile()
		}, true},
		{"the later app removes it when it exits in turn", func(t *testing.T, path string) {
			first := start(t, path)
			second := start(t, path)
			first.removeOwnExecFile()
			second.removeOwnExecFile()
		}, false},
		{"a file removed by the toggle is not recreated at exit", func(t *testing.T, path string) {
			s := start(t, path)
			if err := s.SetExecFile(false); err != nil {
				t.Fatal(err)
			}
			s.removeOwnExecFile()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "healthy")
			tc.run(t, path)
			if got := exists(path); got != tc.want {
				t.Errorf("exec file exists = %t, want %t", got, tc.want)
			}
			if leftovers, _ := filepath.Glob(path + ".*"); len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

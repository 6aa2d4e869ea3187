// Package leftovers has a test binary check that its tests, and every
// process they start, leave nothing in the system's temporary directory:
// a node that is killed, a pod's files, a cluster's directory.
//
//	func TestMain(m *testing.M) {
//		check := leftovers.Isolate()
//		goleak.VerifyTestMain(m, goleak.Cleanup(check))
//	}
package leftovers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Isolate points TMPDIR, for this process and the processes it starts,
// at a new directory in the system's temporary directory, and returns
// the check to run once the tests are done: it lists what is left there,
// removes the directory, and exits 1 if anything was left by tests that
// otherwise passed (code 0). The directory is searchable by every user
// (0711), as /tmp is, for processes that run as another user and read a
// file by its path.
func Isolate() (check func(code int)) {
	dir, err := os.MkdirTemp("", "podgate-tests-")
	if err == nil {
		err = os.Chmod(dir, 0o711)
	}
	if err == nil {
		err = os.Setenv("TMPDIR", dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", err)
		os.Exit(1)
	}
	return func(code int) {
		left, err := List(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "leftovers:", err)
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			fmt.Fprintln(os.Stderr, "leftovers: remove the tests' temporary directory:", rerr)
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the tests left %d entries in the temporary directory:\n", len(left))
			for _, l := range left {
				fmt.Fprintln(os.Stderr, "  ", l)
			}
			if code == 0 {
				os.Exit(1)
			}
		}
	}
}

// List names what is in dir: its entries, and those of its directories
// one level down, so that a leftover says whose it was.
func List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
		if !e.IsDir() {
			continue
		}
		sub, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, s := range sub {
			left = append(left, filepath.Join(e.Name(), s.Name()))
		}
	}
	sort.Strings(left)
	return left, nil
}

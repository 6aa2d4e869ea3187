package ociimage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	bins    map[string]string
	binErr  error
)

// helloSource is a program that prints its greeting: two greetings make
// two static binaries that differ in a few bytes.
const helloSource = `package main

import "fmt"

func main() { fmt.Println(%q) }
`

// helloBinary builds (once per test run) a static Linux binary printing
// greeting ("hello A" or "hello B"), as hack/image.sh builds podgate.
func helloBinary(t *testing.T, greeting string) string {
	t.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binErr = fmt.Errorf("the go tool is needed to build the test binaries: %w", err)
			return
		}
		if binDir, binErr = os.MkdirTemp("", "ociimage-test-"); binErr != nil {
			return
		}
		bins = map[string]string{}
		for _, g := range []string{"hello A", "hello B"} {
			src := filepath.Join(binDir, "src-"+g[len(g)-1:])
			if binErr = os.MkdirAll(src, 0o755); binErr != nil {
				return
			}
			files := map[string]string{
				"go.mod":  "module hello\n\ngo 1.26\n",
				"main.go": fmt.Sprintf(helloSource, g),
			}
			for name, body := range files {
				if binErr = os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); binErr != nil {
					return
				}
			}
			out := filepath.Join(binDir, "hello-"+g[len(g)-1:])
			cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, ".")
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off")
			if b, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s: %w\n%s", g, err, b)
				return
			}
			bins[g] = out
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	p, ok := bins[greeting]
	if !ok {
		t.Fatalf("no test binary for %q", greeting)
	}
	return p
}

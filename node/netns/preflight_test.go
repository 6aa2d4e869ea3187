//go:build linux

package netns

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// worldRunnable copies this test binary where any user may run it (go
// test's own build directory is private to root).
func worldRunnable(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "podnet-preflight-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "podnet.test")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPreflightNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	bin := worldRunnable(t)
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	cases := []struct {
		name string
		cred *syscall.Credential
		caps []uintptr
		want string
	}{
		{"root passes", nil, nil, "ok"},
		{"an ordinary user lacks both capabilities", nobody, nil,
			preflightNeed + ": running as uid 65534 without CAP_SYS_ADMIN and CAP_NET_ADMIN"},
		{"CAP_NET_ADMIN alone is not enough", nobody, []uintptr{unix.CAP_NET_ADMIN},
			preflightNeed + ": running as uid 65534 without CAP_SYS_ADMIN"},
		{"CAP_SYS_ADMIN alone is not enough", nobody, []uintptr{unix.CAP_SYS_ADMIN},
			preflightNeed + ": running as uid 65534 without CAP_NET_ADMIN"},
		{"both capabilities are enough without root", nobody, []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}, "ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := childCmd("preflight")
			cmd.Path, cmd.Args[0] = bin, bin
			cmd.Dir = "/"
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: tc.cred, AmbientCaps: tc.caps, Pdeathsig: syscall.SIGKILL}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("preflight child: %v\nstderr:\n%s", err, errb.String())
			}
			if out.String() != tc.want {
				t.Fatalf("Preflight: %q\nwant %q", out.String(), tc.want)
			}
		})
	}
}

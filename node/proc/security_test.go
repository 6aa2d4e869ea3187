package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podgate/podgate/test/syncbuf"
)

// needRoot skips where the node's privileges are not there to give up:
// CI runs as root, as the node of `podgate cluster up` does.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the node gives up privileges it has; this process has none to give up")
	}
}

// status is /proc/PID/status as a map (Uid, Gid, CapEff, NoNewPrivs, …).
func status(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return m
}

func u32(v uint32) *uint32 { return &v }

func TestSecurityIsWhatTheStartedProgramHas(t *testing.T) {
	needRoot(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		sec  Security
		want map[string]string
	}{
		{"Knative's queue container: nonroot, drop ALL, no privilege escalation",
			Security{UID: u32(65532), GID: u32(65532), Caps: []Capability{}, NoNewPrivs: true, ReadOnlyRoot: true},
			map[string]string{"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532", "Groups": "",
				"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
				"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1"}},
		{"root with drop ALL has no capability at all",
			Security{Caps: []Capability{}},
			map[string]string{"Uid": "0 0 0 0", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
				"CapBnd": "0000000000000000", "NoNewPrivs": "0"}},
		{"root with drop ALL, add NET_BIND_SERVICE keeps that one",
			Security{Caps: []Capability{10}},
			map[string]string{"Uid": "0 0 0 0", "CapPrm": "0000000000000400", "CapEff": "0000000000000400",
				"CapBnd": "0000000000000400"}},
		{"a user and supplementary groups",
			Security{UID: u32(1000), GID: u32(2000), Groups: []uint32{3000, 4000}},
			map[string]string{"Uid": "1000 1000 1000 1000", "Gid": "2000 2000 2000 2000", "Groups": "3000 4000",
				"CapEff": "0000000000000000", "NoNewPrivs": "0"}},
		{"no_new_privs alone", Security{NoNewPrivs: true}, map[string]string{"Uid": "0 0 0 0", "NoNewPrivs": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSupervisor(t)
			sec := tc.sec
			p, err := s.Start(Spec{Path: "/bin/sleep", Args: []string{"sleep", "60"}, Dir: "/", Security: &sec})
			if err != nil {
				t.Fatal(err)
			}
			st := status(t, p.Pid)
			if st["Name"] != "sleep" {
				t.Errorf("the started process is %q, want the program (sleep) itself, same pid", st["Name"])
			}
			for k, want := range tc.want {
				if st[k] != want {
					t.Errorf("%s: %q, want %q", k, st[k], want)
				}
			}
			p.Kill()
			waitDone(t, p)
		})
	}
}

func TestReadOnlyRootFilesystemLeavesDevProcAndVolumesWritable(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	vol := filepath.Join(dir, "volume")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSupervisor(t)
	var out, errOut syncbuf.Buffer
	sp := sh(`echo x > "$D/file" && echo wrote; echo y > /dev/null && echo devnull; `+
		`echo 0 > /proc/self/oom_score_adj && echo proc; echo z > "$V/file" && echo volume`, &out, &errOut)
	sp.Env = append(sp.Env, "D="+dir, "V="+vol)
	sp.Security = &Security{ReadOnlyRoot: true, Writable: []string{vol, filepath.Join(dir, "absent")}}
	p, err := s.Start(sp)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, p)
	if got := out.String(); got != "devnull\nproc\nvolume\n" {
		t.Errorf("stdout %q, want only /dev/null, /proc and the volume written", got)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "file")); err != nil || string(b) != "z\n" {
		t.Errorf("the volume's file: %q %v, want z", b, err)
	}
	if !strings.Contains(errOut.String(), "Read-only file system") {
		t.Errorf("stderr %q, want the write refused as read-only", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "file")); err == nil {
		t.Error("the file was written")
	}
	// The read-only view was the program's alone.
	if err := os.WriteFile(filepath.Join(dir, "after"), []byte("x"), 0o600); err != nil {
		t.Errorf("this machine's filesystem is no longer writable: %v", err)
	}
}

func TestAProgramItsUserCannotReachStillRuns(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "echo")
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSupervisor(t)
	var out syncbuf.Buffer
	p, err := s.Start(Spec{Path: prog, Args: []string{"echo", "ran"}, Dir: "/", Stdout: &out,
		Security: &Security{UID: u32(65532), GID: u32(65532)}})
	if err != nil {
		t.Fatal(err)
	}
	if e := waitDone(t, p); e.Code != 0 || out.String() != "ran\n" {
		t.Errorf("exit %d, stdout %q; want 0 and ran", e.Code, out.String())
	}
}

func TestASecureStartThatFailsSaysWhy(t *testing.T) {
	needRoot(t)
	t.Parallel()
	s := newSupervisor(t)
	_, err := s.Start(Spec{Path: "/nonexistent/podgate-test-binary", Security: &Security{NoNewPrivs: true}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/podgate-test-binary") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want the program named, no such file", err)
	}
	if n := s.Live(); n != 0 {
		t.Errorf("Live() = %d after a failed start, want 0", n)
	}
}

func TestBoundFilesReplaceTheirTargetsForTheProgramAlone(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target, ro := write("target", "machine's\n"), write("ro-target", "machine's ro\n")
	src, roSrc := write("pod-file", "pod's\n"), write("pod-ro-file", "pod's ro\n")
	for _, tc := range []struct {
		name   string
		sec    Security
		script string
		want   string
	}{
		{"the program reads the bound file at the target's path, and writes to it go to the source",
			Security{Binds: []Bind{{Source: src, Target: target}}},
			`cat "$T"; echo more >> "$T" && echo appended`, "pod's\nappended\n"},
		{"under a read-only root a bind stays writable, unless ReadOnly",
			Security{ReadOnlyRoot: true, Binds: []Bind{{Source: src, Target: target}, {Source: roSrc, Target: ro, ReadOnly: true}}},
			`cat "$R"; echo again >> "$T" && echo appended; echo x >> "$R" && echo wrote-ro`, "pod's ro\nappended\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSupervisor(t)
			var out, errOut syncbuf.Buffer
			sp := sh(tc.script, &out, &errOut)
			sp.Env = append(sp.Env, "T="+target, "R="+ro)
			sec := tc.sec
			sp.Security = &sec
			p, err := s.Start(sp)
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
			if got := out.String(); got != tc.want {
				t.Errorf("stdout %q, want %q (stderr %q)", got, tc.want, errOut.String())
			}
		})
	}
	for path, want := range map[string]string{target: "machine's\n", ro: "machine's ro\n", src: "pod's\nmore\nagain\n", roSrc: "pod's ro\n"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", filepath.Base(path), b, err, want)
		}
	}
}

func TestABindOverAMissingTargetFailsTheStartAndSaysWhich(t *testing.T) {
	needRoot(t)
	t.Parallel()
	s := newSupervisor(t)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Start(Spec{Path: "/bin/true", Args: []string{"true"}, Dir: "/",
		Security: &Security{Binds: []Bind{{Source: src, Target: "/nonexistent/podgate-target"}}}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/podgate-target") {
		t.Fatalf("err = %v, want the target named", err)
	}
}

func TestAVolumeIsMountedAtAPathTheMachineLacksWhichStaysUntouched(t *testing.T) {
	needRoot(t)
	t.Parallel()
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "conf"), []byte("volume's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "one")
	if err := os.WriteFile(file, []byte("file's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Missing here: /var/lib's entries must stay visible beside them.
	const roDir, rwDir, oneFile = "/var/lib/podgate-proc-test/ro", "/var/lib/podgate-proc-test/rw", "/etc/podgate-proc-test/one"
	entries, err := os.ReadDir("/var/lib")
	if err != nil || len(entries) == 0 {
		t.Skipf("needs a non-empty /var/lib: %v", err)
	}
	seen := entries[0].Name()
	for _, tc := range []struct {
		name   string
		sec    Security
		script string
		want   string
	}{
		{"read-only: the files are read, a write fails with EROFS",
			Security{Binds: []Bind{{Source: vol, Target: roDir, ReadOnly: true, Volume: true}}},
			`cat ` + roDir + `/conf; touch ` + roDir + `/new 2>&1 | grep -q "Read-only file system" && echo erofs; test -e /var/lib/` + seen + ` && echo kept`,
			"volume's\nerofs\nkept\n"},
		{"writable under a read-only root, a file at a missing path beside it",
			Security{ReadOnlyRoot: true, Binds: []Bind{{Source: vol, Target: rwDir, Volume: true}, {Source: file, Target: oneFile, Volume: true, ReadOnly: true}}},
			`echo w > ` + rwDir + `/written && echo wrote; cat ` + oneFile + `; touch /var/lib/podgate-proc-test/x 2>/dev/null || echo root-ro`,
			"wrote\nfile's\nroot-ro\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSupervisor(t)
			var out, errOut syncbuf.Buffer
			sp := sh(tc.script, &out, &errOut)
			sec := tc.sec
			sp.Security = &sec
			p, err := s.Start(sp)
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, p)
			if got := out.String(); got != tc.want {
				t.Errorf("stdout %q, want %q (stderr %q)", got, tc.want, errOut.String())
			}
		})
	}
	for _, p := range []string{"/var/lib/podgate-proc-test", "/etc/podgate-proc-test"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on this machine", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(vol, "written")); err != nil || string(b) != "w\n" {
		t.Errorf("the write through the mount reached the volume: %q %v", b, err)
	}
}

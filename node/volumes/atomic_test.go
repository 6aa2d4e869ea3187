package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// visible is what a reader of dir sees: every regular file reached
// through the volume's visible entries (links followed), with its mode.
func visible(t *testing.T, dir string) map[string]File {
	t.Helper()
	out := map[string]File{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(rel string)
	walk = func(rel string) {
		path := filepath.Join(dir, rel)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("visible entry %s: %v", rel, err)
		}
		if info.IsDir() {
			sub, err := os.ReadDir(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range sub {
				walk(filepath.Join(rel, e.Name()))
			}
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = File{Data: b, Mode: info.Mode().Perm()}
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "..") {
			walk(e.Name())
		}
	}
	return out
}

// timestamped lists dir's timestamped directories.
func timestamped(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	return out
}

func f(data string, mode fs.FileMode) File { return File{Data: []byte(data), Mode: mode} }

func TestWriteAtomicLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		writes      []map[string]File
		want        map[string]File
		wantChanged bool
		// wantLinks are the visible entries, each a link to ..data/NAME.
		wantLinks []string
	}{
		{
			name:        "first write: each key a link through ..data to a timestamped directory",
			writes:      []map[string]File{{"Corefile": f(".:53 {}", 0o644), "token": f("t", 0o600)}},
			want:        map[string]File{"Corefile": f(".:53 {}", 0o644), "token": f("t", 0o600)},
			wantChanged: true, wantLinks: []string{"Corefile", "token"},
		},
		{
			name:        "a nested path is one link to its top directory",
			writes:      []map[string]File{{"certs/tls.crt": f("c", 0o644), "certs/tls.key": f("k", 0o400)}},
			want:        map[string]File{"certs/tls.crt": f("c", 0o644), "certs/tls.key": f("k", 0o400)},
			wantChanged: true, wantLinks: []string{"certs"},
		},
		{
			name:        "an update replaces the contents",
			writes:      []map[string]File{{"a": f("1", 0o644)}, {"a": f("2", 0o644)}},
			want:        map[string]File{"a": f("2", 0o644)},
			wantChanged: true, wantLinks: []string{"a"},
		},
		{
			name:        "a key the update lacks is gone, a new one appears",
			writes:      []map[string]File{{"a": f("1", 0o644), "b": f("1", 0o644)}, {"b": f("1", 0o644), "c": f("3", 0o644)}},
			want:        map[string]File{"b": f("1", 0o644), "c": f("3", 0o644)},
			wantChanged: true, wantLinks: []string{"b", "c"},
		},
		{
			name:        "a mode change alone is an update",
			writes:      []map[string]File{{"a": f("1", 0o644)}, {"a": f("1", 0o400)}},
			want:        map[string]File{"a": f("1", 0o400)},
			wantChanged: true, wantLinks: []string{"a"},
		},
		{
			name:        "the same payload again is not written",
			writes:      []map[string]File{{"a": f("1", 0o644)}, {"a": f("1", 0o644)}},
			want:        map[string]File{"a": f("1", 0o644)},
			wantChanged: false, wantLinks: []string{"a"},
		},
		{
			name:        "an empty payload is an empty volume",
			writes:      []map[string]File{{"a": f("1", 0o644)}, {}},
			want:        map[string]File{},
			wantChanged: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "vol")
			var changed bool
			var before []string
			for i, w := range tc.writes {
				if i > 0 {
					before = timestamped(t, dir)
				}
				var err error
				if changed, err = WriteAtomic(dir, w, Ownership{}); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			got := visible(t, dir)
			if len(got) != len(tc.want) {
				t.Errorf("visible files %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if g, ok := got[k]; !ok || string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", k, g.Data, g.Mode, w.Data, w.Mode)
				}
			}
			for _, l := range tc.wantLinks {
				if target, err := os.Readlink(filepath.Join(dir, l)); err != nil || target != filepath.Join(dataDir, l) {
					t.Errorf("%s links to %q (%v), want %s", l, target, err, filepath.Join(dataDir, l))
				}
			}
			ts := timestamped(t, dir)
			if len(ts) != 1 {
				t.Fatalf("timestamped directories %v, want one (old ones removed)", ts)
			}
			if data, err := os.Readlink(filepath.Join(dir, dataDir)); err != nil || data != ts[0] {
				t.Errorf("..data -> %q (%v), want %s", data, err, ts[0])
			}
			if !tc.wantChanged && !slices.Equal(before, ts) {
				t.Errorf("an unchanged payload made a new directory: %v, was %v", ts, before)
			}
		})
	}
}

func TestWriteAtomicRefusesPathsThatLeaveTheVolumeOrClashWithItsOwnNames(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", "..data", "..2026_x", "", "a//b"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if _, err := WriteAtomic(dir, map[string]File{p: f("x", 0o644)}, Ownership{}); err == nil {
				t.Errorf("path %q written, want refused", p)
			}
		})
	}
}

func TestWriteAtomicGivesFilesToTheFSGroupAsTheKubelet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: files are given to another group")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "vol")
	gid := int64(4321)
	if _, err := WriteAtomic(dir, map[string]File{"certs/key": f("k", 0o400), "conf": f("c", 0o644)}, Ownership{GID: &gid, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		mode fs.FileMode
	}{
		{"certs/key", 0o440},             // the group's read bit added
		{"conf", 0o644},                  // already readable by the group
		{"certs", 0o755 | fs.ModeSetgid}, // setgid, searchable
	} {
		info, err := os.Stat(filepath.Join(dir, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode() & (fs.ModePerm | fs.ModeSetgid); got != tc.mode {
			t.Errorf("%s mode %v, want %v", tc.path, got, tc.mode)
		}
		if g := info.Sys().(*syscall.Stat_t).Gid; g != uint32(gid) {
			t.Errorf("%s group %d, want %d", tc.path, g, gid)
		}
	}
	// Written again unchanged: the masks are not a change.
	changed, err := WriteAtomic(dir, map[string]File{"certs/key": f("k", 0o400), "conf": f("c", 0o644)}, Ownership{GID: &gid, ReadOnly: true})
	if err != nil || changed {
		t.Errorf("rewrite with fsGroup: changed %v, err %v; want unchanged", changed, err)
	}
}

// FuzzWriteAtomicStaysInsideItsVolume: whatever the payload's paths (the
// API server validates them; the writer must hold anyway), a payload
// written leaves nothing outside the volume's directory, and reads back
// through the visible entries.
func FuzzWriteAtomicStaysInsideItsVolume(f *testing.F) {
	for _, seed := range []string{"a", "a/b", "../a", "/a", "a/../../b", "..data", "..a", ".a", "a/..", "a//b", "a/./b", "~", "a\x00b"} {
		f.Add(seed, "content")
	}
	f.Fuzz(func(t *testing.T, path, content string) {
		root := t.TempDir()
		dir := filepath.Join(root, "vol")
		if _, err := WriteAtomic(dir, map[string]File{path: {Data: []byte(content), Mode: 0o644}}, Ownership{}); err != nil {
			return
		}
		ents, err := os.ReadDir(root)
		if err != nil || len(ents) != 1 || ents[0].Name() != "vol" {
			t.Fatalf("path %q: the volume's parent holds %v (%v)", path, ents, err)
		}
		got := visible(t, dir)
		if g, ok := got[path]; !ok || string(g.Data) != content {
			t.Fatalf("path %q: visible %v", path, got)
		}
	})
}

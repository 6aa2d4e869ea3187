package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxTrackedBytes bounds every file in the repository. Built binaries,
// image layouts and caches are made again by scripts; committed, they
// bloat every clone for good (a 34 MB podgate binary once was).
const maxTrackedBytes = 1 << 20

func TestNoTrackedFileIsOverOneMegabyte(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0})
	if len(files) < 10 {
		t.Fatalf("git ls-files listed %d files: not the repository?", len(files))
	}
	for _, f := range files {
		info, err := os.Lstat(filepath.Join(root, string(f)))
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		if info.Size() > maxTrackedBytes {
			t.Errorf("%s is %d bytes, over %d: build it, don't commit it (and add it to .gitignore)", f, info.Size(), maxTrackedBytes)
		}
	}
}

// Package secretvolume writes files into a directory the way the kubelet
// updates a secret volume (its AtomicWriter), for tests of programs that
// must pick up a rotated secret: the files live in a timestamped
// directory, ..data is a symbolic link to it, and each visible file is a
// symbolic link through ..data. An update writes a new timestamped
// directory, swaps ..data to it with one rename (so a reader sees either
// every old file or every new one), then removes the old directory.
package secretvolume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const dataDir = "..data"

// Write makes dir hold exactly files (name → contents) as a secret volume
// does, creating dir when needed; called again, it is the kubelet's
// atomic update of the volume.
func Write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("secret volume %s: %w", dir, err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			return fmt.Errorf("secret volume %s: %w", dir, err)
		}
	}
	old, err := os.Readlink(filepath.Join(dir, dataDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("secret volume %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, dataDir+"_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return fmt.Errorf("secret volume %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDir)); err != nil {
		return fmt.Errorf("secret volume %s: %w", dir, err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
				return fmt.Errorf("secret volume %s: %w", dir, err)
			}
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("secret volume %s: %w", dir, err)
		}
	}
	return nil
}

package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// dataDir is the symbolic link to the current timestamped directory; the
// visible entries of a volume are links through it.
const (
	dataDir    = "..data"
	dataDirTmp = "..data_tmp"
)

// File is one file of a volume's payload: its contents and permission
// bits.
type File struct {
	Data []byte
	Mode fs.FileMode
}

// Ownership is how a volume's files are owned: the pod's fsGroup, as the
// kubelet applies it (SetVolumeOwnership), when GID is set.
type Ownership struct {
	GID *int64
	// ReadOnly: the volume's files get the group's read bit (a configMap,
	// a secret); else read and write (an emptyDir).
	ReadOnly bool
}

// WriteAtomic makes dir hold exactly payload (relative path → file) in
// the kubelet's atomic-writer layout: the files in a timestamped
// directory ..YYYY_MM_DD_HH_MM_SS.NNN, the symbolic link ..data to it,
// and each top-level entry a link through ..data. An update writes a new
// timestamped directory and swaps ..data with one rename, so a reader
// (through a path under dir) sees every old file or every new one, never
// a mix; entries the new payload lacks are then removed, and the old
// directory with them. A payload the volume already holds (contents and
// modes) is not written again: changed reports whether it was.
func WriteAtomic(dir string, payload map[string]File, own Ownership) (changed bool, err error) {
	for p := range payload {
		if err := validPath(p); err != nil {
			return false, fmt.Errorf("volume %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	old, err := os.Readlink(filepath.Join(dir, dataDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if old != "" && same(filepath.Join(dir, old), payload, own) {
		return false, nil
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := writeFiles(ts, payload); err != nil {
		_ = os.RemoveAll(ts)
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := own.apply(ts); err != nil {
		_ = os.RemoveAll(ts)
		return false, fmt.Errorf("volume %s: fsGroup: %w", dir, err)
	}
	tmp := filepath.Join(dir, dataDirTmp)
	_ = os.Remove(tmp) // left by an update that failed half-way
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDir)); err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	top := map[string]bool{}
	for p := range payload {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
				return true, fmt.Errorf("volume %s: %w", dir, err)
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true, fmt.Errorf("volume %s: %w", dir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "..") || top[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return true, fmt.Errorf("volume %s: %w", dir, err)
		}
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return true, fmt.Errorf("volume %s: %w", dir, err)
		}
	}
	return true, own.apply(dir, true)
}

// validPath refuses a payload path that is absolute, empty, or leaves the
// volume (the API server validates items' paths; this holds anyway), or
// that starts with "..", the writer's own names.
func validPath(p string) error {
	if p == "" || filepath.IsAbs(p) || filepath.Clean(p) != p || strings.HasPrefix(p, "..") || slices.Contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("invalid path %q", p)
	}
	return nil
}

// writeFiles writes payload under ts, each file with its mode whatever
// the umask, each directory 0755.
func writeFiles(ts string, payload map[string]File) error {
	if err := os.Chmod(ts, 0o755); err != nil { // MkdirTemp made it 0700
		return err
	}
	for p, f := range payload {
		path := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, 0o600); err != nil {
			return err
		}
		if err := os.Chmod(path, f.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

// same reports whether the timestamped directory ts holds exactly
// payload.
func same(ts string, payload map[string]File, own Ownership) bool {
	n := 0
	err := filepath.WalkDir(ts, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(ts, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != own.fileMode(f.Mode).Perm() {
			return errors.New("mode")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errors.New("data")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// The kubelet's masks (SetVolumeOwnership): a file gets the group's read
// bit, or read and write; a directory also the group's search bit and
// setgid, so that files made in it later belong to the group.
const (
	rwMask   fs.FileMode = 0o660
	roMask   fs.FileMode = 0o440
	execMask fs.FileMode = 0o110
)

// fileMode is the mode a file of mode m ends with.
func (o Ownership) fileMode(m fs.FileMode) fs.FileMode {
	if o.GID == nil {
		return m
	}
	if o.ReadOnly {
		return m | roMask
	}
	return m | rwMask
}

// apply gives everything under root (root itself only with self) to
// the fsGroup, as the kubelet does: chown to the group, the masks added.
func (o Ownership) apply(root string, selfOnly ...bool) error {
	if o.GID == nil {
		return nil
	}
	one := func(path string, info fs.FileInfo) error {
		if err := os.Lchown(path, -1, int(*o.GID)); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		mask := rwMask
		if o.ReadOnly {
			mask = roMask
		}
		mode := info.Mode().Perm() | mask
		if info.IsDir() {
			mode |= execMask | fs.ModeSetgid
		}
		return os.Chmod(path, mode|info.Mode()&(fs.ModeSetuid|fs.ModeSticky))
	}
	if len(selfOnly) > 0 && selfOnly[0] {
		info, err := os.Lstat(root)
		if err != nil {
			return err
		}
		return one(root, info)
	}
	return filepath.Walk(root, func(path string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return one(path, info)
	})
}

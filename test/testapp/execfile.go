package testapp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// execFileContent is what an exec probe's `cat` prints while passing.
const execFileContent = "ok\n"

// createExecFile writes a new file at path and returns what it wrote. A new
// file (written aside, then renamed over the path), not the old one
// rewritten: its identity tells whether another app writing the same path
// came after this one (removeOwnExecFile).
func createExecFile(path string) (os.FileInfo, error) {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(execFileContent), 0o644); err != nil {
		return nil, fmt.Errorf("testapp: create exec file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("testapp: create exec file: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("testapp: create exec file: %w", err)
	}
	return fi, nil
}

// removeOwnExecFile removes the exec file when the app exits, so that
// toggle files do not pile up in a shared directory (locally every
// container sees the machine's /tmp), unless another app wrote the path
// after this one: that one still needs it.
func (s *Server) removeOwnExecFile() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.execFile == nil {
		return
	}
	if cur, err := os.Stat(s.cfg.ExecFile); err == nil && os.SameFile(cur, s.execFile) {
		_ = os.Remove(s.cfg.ExecFile)
	}
	s.execFile = nil
}

// ExecFilePresent reports whether the exec file exists, i.e. whether an exec
// probe that cats it passes. It is false when there is no exec file.
func (s *Server) ExecFilePresent() bool {
	if s.cfg.ExecFile == "" {
		return false
	}
	_, err := os.Stat(s.cfg.ExecFile)
	return err == nil
}

// errNoExecFile is returned by exec-file toggles of an app started without one.
var errNoExecFile = errors.New("no exec file: start the app with --exec-file PATH")

// SetExecFile creates (present) or removes the exec file, as
// /toggleExec?set= does.
func (s *Server) SetExecFile(present bool) error {
	if s.cfg.ExecFile == "" {
		return errNoExecFile
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setExecFileLocked(present)
}

// flipExecFile removes the exec file if it exists, else creates it, and
// returns whether it exists now. The file on disk is the state, so a file
// removed by hand flips back to present.
func (s *Server) flipExecFile() (bool, error) {
	if s.cfg.ExecFile == "" {
		return false, errNoExecFile
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := os.Stat(s.cfg.ExecFile)
	present := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("testapp: stat exec file: %w", err)
	}
	if err := s.setExecFileLocked(!present); err != nil {
		return present, err
	}
	return !present, nil
}

func (s *Server) setExecFileLocked(present bool) error {
	if present {
		fi, err := createExecFile(s.cfg.ExecFile)
		if err != nil {
			return err
		}
		s.execFile = fi
		return nil
	}
	if err := os.Remove(s.cfg.ExecFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("testapp: remove exec file: %w", err)
	}
	s.execFile = nil
	return nil
}

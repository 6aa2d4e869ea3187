package testapp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// execFileContent is what an exec probe's `cat` prints while passing.
const execFileContent = "ok\n"

func createExecFile(path string) error {
	if err := os.WriteFile(path, []byte(execFileContent), 0o644); err != nil {
		return fmt.Errorf("testapp: create exec file: %w", err)
	}
	return nil
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
		return createExecFile(s.cfg.ExecFile)
	}
	if err := os.Remove(s.cfg.ExecFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("testapp: remove exec file: %w", err)
	}
	return nil
}

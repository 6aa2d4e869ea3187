package command

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExecuteTurnsErrorsIntoExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		runErr   error
		wantCode int
		wantErr  string
	}{
		{"success exits 0", nil, nil, ExitOK, ""},
		{"invalid input exits 1 with its message", nil, Invalidf("USER_PORT: %q is not a port number", "x"), ExitInvalid, `Error: USER_PORT: "x" is not a port number`},
		{"a usage error exits 2", nil, Usagef("--timeout must be positive"), ExitUsage, "Error: --timeout must be positive"},
		{"a bare code prints nothing", nil, WithCode(3), 3, ""},
		{"an unknown flag is a usage error naming the help", []string{"--nope"}, nil, ExitUsage, "unknown flag: --nope (see test --help)"},
		{"a plain error is a usage error", nil, errors.New("accepts no arguments"), ExitUsage, "Error: accepts no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := &cobra.Command{Use: "test", RunE: func(*cobra.Command, []string) error { return tc.runErr }}
			Prepare(root)
			var stdout, stderr bytes.Buffer
			code := Execute(root, tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			if tc.wantErr == "" && stderr.Len() != 0 {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/internal/versioninfo"
)

// version is set at link time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/podgate
//
// Otherwise it comes from the build info: the module version of `go install
// github.com/podgate/podgate/cmd/podgate@v1.2.3`, or the pseudo-version the
// go command derives from git for `go build` in a clone.
var version = ""

func init() { register(newVersionCmd) }

// buildVersion is what `podgate version` and `podgate --version` print
// after "podgate ".
func buildVersion() string { return versioninfo.Version(version) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the podgate version (also: podgate --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "podgate %s\n", buildVersion())
			return nil
		},
	}
}

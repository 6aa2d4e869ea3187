package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
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
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionString(version, info, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
}

// versionString puts together the version, the commit it was built from
// and the toolchain. Builds without either (go run, -buildvcs=false, a git
// worktree, whose .git the go command does not read) say so and how to
// stamp one, rather than a bare "(devel)".
func versionString(linked string, info *debug.BuildInfo, toolchain string) string {
	v := linked
	settings := map[string]string{}
	if info != nil {
		if v == "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	var details []string
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		commit := "commit " + rev
		if t := settings["vcs.time"]; t != "" {
			commit += " of " + t
		}
		details = append(details, commit)
		if settings["vcs.modified"] == "true" {
			details = append(details, "with local changes")
		}
	}
	if v == "" {
		v = "devel"
		if len(details) == 0 {
			details = append(details, "no version or commit stamped: built by go run, with -buildvcs=false or outside a git clone; stamp one with -ldflags '-X main.version=VERSION'")
		}
	}
	details = append(details, toolchain)
	return fmt.Sprintf("%s (%s)", v, strings.Join(details, "; "))
}

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

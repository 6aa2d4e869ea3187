// Package versioninfo says which podgate a binary is: the version stamped
// at link time (cmd/podgate's main.version), else the module version the
// go command recorded, with the commit it was built from and the
// toolchain. `podgate version` prints it; the node reports it.
package versioninfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the binary's version line, after "podgate ": linked (the
// version stamped with -ldflags -X, "" for none), else the build info's.
func Version(linked string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return format(linked, info, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
}

// format puts together the version, the commit it was built from
// and the toolchain. Builds without either (go run, -buildvcs=false, a git
// worktree, whose .git the go command does not read) say so and how to
// stamp one, rather than a bare "(devel)".
func format(linked string, info *debug.BuildInfo, toolchain string) string {
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

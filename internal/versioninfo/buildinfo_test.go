package versioninfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	const toolchain = "go1.26.8 linux/amd64"
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "2db4c3ba69158402874c56f6d47e3e570543852d"},
		{Key: "vcs.time", Value: "2026-11-24T23:51:52Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	modified := append(append([]debug.BuildSetting{}, vcs[:3]...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	for _, tc := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"a released module version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			"v1.2.3 (go1.26.8 linux/amd64)"},
		{"a go build in a clone: the pseudo-version and the commit", "",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124235152-2db4c3ba6915"}, Settings: vcs},
			"v0.0.0-20261124235152-2db4c3ba6915 (commit 2db4c3ba6915 of 2026-11-24T23:51:52Z; go1.26.8 linux/amd64)"},
		{"local changes are said", "",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124235152-2db4c3ba6915+dirty"}, Settings: modified},
			"v0.0.0-20261124235152-2db4c3ba6915+dirty (commit 2db4c3ba6915 of 2026-11-24T23:51:52Z; with local changes; go1.26.8 linux/amd64)"},
		{"-ldflags -X wins over the module version", "v2.0.0-rc1",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"v2.0.0-rc1 (commit 2db4c3ba6915 of 2026-11-24T23:51:52Z; go1.26.8 linux/amd64)"},
		{"a commit without a version is devel at that commit", "",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"devel (commit 2db4c3ba6915 of 2026-11-24T23:51:52Z; go1.26.8 linux/amd64)"},
		{"go run: says why there is nothing and how to stamp", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"devel (no version or commit stamped: built by go run, with -buildvcs=false or outside a git clone; stamp one with -ldflags '-X main.version=VERSION'; go1.26.8 linux/amd64)"},
		{"no build info at all", "", nil,
			"devel (no version or commit stamped: built by go run, with -buildvcs=false or outside a git clone; stamp one with -ldflags '-X main.version=VERSION'; go1.26.8 linux/amd64)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := format(tc.linked, tc.info, toolchain); got != tc.want {
				t.Errorf("format = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

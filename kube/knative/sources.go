package knative

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"golang.org/x/mod/modfile"
)

// Knative Serving's module and the version installed: the newest whose
// components build from the Go module proxy (v0.51.0's knative.dev/pkg is
// not served).
const (
	ServingModule  = "knative.dev/serving"
	ServingVersion = "v0.50.0"
)

// The modules whose config/ holds the CRDs Serving needs besides its own
// (Knative's release assembles them into serving-crds.yaml from symlinks
// in serving's config/core, which a module zip does not keep): Ingress,
// ServerlessService, Certificate, ClusterDomainClaim and config-network
// from networking, Image from caching.
const (
	networkingModule = "knative.dev/networking"
	cachingModule    = "knative.dev/caching"
)

// Sources are the module directories (in the Go module cache, read-only)
// the manifests are read from.
type Sources struct {
	// Serving is knative.dev/serving at ServingVersion; its config/core
	// is Knative Serving's install.
	Serving string
	// Networking and Caching are knative.dev/networking and
	// knative.dev/caching at the versions Serving's go.mod requires;
	// their config/ hold CRDs (and networking's config-network).
	Networking, Caching string
}

// module is what `go mod download -json` says of one module.
type module struct {
	Path, Version, Dir, GoMod, Error string
}

// FindSources downloads (or finds in the module cache) knative.dev/serving
// at ServingVersion and the networking and caching modules its go.mod
// requires, with the go command (GOPROXY and the module cache as the
// environment sets them), run in an empty temporary directory: no
// module's go.mod or go.work is consulted or changed.
func FindSources(ctx context.Context) (Sources, error) {
	work, err := os.MkdirTemp("", "podgate-knative-sources")
	if err != nil {
		return Sources{}, fmt.Errorf("knative sources: %w", err)
	}
	defer os.RemoveAll(work)
	serving, err := download(ctx, work, ServingModule+"@"+ServingVersion)
	if err != nil {
		return Sources{}, err
	}
	gomod, err := os.ReadFile(serving[0].GoMod)
	if err != nil {
		return Sources{}, fmt.Errorf("knative sources: %w", err)
	}
	want, err := requires(serving[0].GoMod, gomod, networkingModule, cachingModule)
	if err != nil {
		return Sources{}, err
	}
	deps, err := download(ctx, work, want...)
	if err != nil {
		return Sources{}, err
	}
	return Sources{Serving: serving[0].Dir, Networking: deps[0].Dir, Caching: deps[1].Dir}, nil
}

// requires is MODULE@VERSION of each of mods as the go.mod file (named
// name) requires it, in order. Its replace directives are ignored, as the
// go command ignores a dependency's (ParseLax drops them).
func requires(name string, gomod []byte, mods ...string) ([]string, error) {
	f, err := modfile.ParseLax(name, gomod, nil)
	if err != nil {
		return nil, fmt.Errorf("knative sources: %w", err)
	}
	var out []string
	for _, m := range mods {
		v := ""
		for _, r := range f.Require {
			if r.Mod.Path == m {
				v = r.Mod.Version
			}
		}
		if v == "" {
			return nil, fmt.Errorf("knative sources: %s does not require %s", name, m)
		}
		out = append(out, m+"@"+v)
	}
	return out, nil
}

// download runs `go mod download -json` for mods in dir and returns what
// it says of each, in order.
func download(ctx context.Context, dir string, mods ...string) ([]module, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"mod", "download", "-json"}, mods...)...)
	cmd.Dir = dir
	// Outside any module or workspace, whatever GOFLAGS says (-mod=vendor
	// would refuse the download).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	// With -json the go command reports a module's failure in its
	// object's Error (and exits 1): say that rather than the exit status.
	raw := stdout.Bytes()
	var out []module
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var m module
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go mod download -json %v: %w (%v)\n%s", mods, err, runErr, stderr.String())
		}
		if m.Error != "" {
			return nil, fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		out = append(out, m)
	}
	if runErr != nil {
		return nil, fmt.Errorf("go mod download -json %v: %w\n%s", mods, runErr, stderr.String())
	}
	byName := map[string]module{}
	for _, m := range out {
		byName[m.Path+"@"+m.Version] = m
	}
	res := make([]module, len(mods))
	for i, want := range mods {
		m, ok := byName[want]
		if !ok || m.Dir == "" {
			return nil, fmt.Errorf("go mod download -json %s: no module directory in its answer:\n%s", want, raw)
		}
		res[i] = m
	}
	return res, nil
}

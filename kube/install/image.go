package install

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/kube/deploy"
)

// modulePath is podgate's Go module, built from source when podgate
// itself is no static binary.
const modulePath = "github.com/podgate/podgate"

// ImageTag is the tag of podgate's image in the cluster's layout; the
// manifests name the image by digest.
const ImageTag = deploy.Image + ":cluster"

// GateImageTag is the tag of the gate's image in the cluster's layout;
// the webhook injects it by digest.
const GateImageTag = deploy.GateImage + ":cluster"

// Image is what the install runs: podgate's image and the gate's, in the
// cluster's OCI layout.
type Image struct {
	// Ref is podgate's image by digest, as the install's manifests name
	// it.
	Ref string
	// GateRef is the gate's image by digest, as the webhook injects it:
	// podgate-gate's, or Ref when there was no podgate-gate to build
	// (podgate's own image runs the gate too, at nearly twice the memory).
	GateRef string
	// Built says what the images hold and how long they took.
	Built string
}

// BuildImage puts a static podgate into an OCI image in the layout dir
// (the one the node runs images from): the podgate binary at executable
// when it is static, as hack/image.sh builds it; else one built with
// CGO_ENABLED=0 (into dir) from podgate's source tree, when this is run
// from there (go run ./cmd/podgate, say), or from the module version the
// binary was installed from (`go install …/cmd/podgate@VERSION` links
// dynamically wherever a C compiler is found). An image holds nothing
// but the binary, so a dynamically linked one could not run from it.
//
// The gate's image goes into the same layout: podgate-gate, the gate
// alone, built from the same source (static, into dir, meanwhile) where
// podgate is built from source; elsewhere there is no podgate-gate to
// build, and the gate runs from podgate's own image, as Built then says.
func BuildImage(ctx context.Context, dir, executable string) (Image, error) {
	begin := time.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Image{}, fmt.Errorf("podgate's image: %w", err)
	}
	static, err := isStatic(executable)
	if err != nil {
		return Image{}, fmt.Errorf("podgate's image: %w", err)
	}
	src := sourceOf(ctx, executable, static)
	gateCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	gate := make(chan gateBuild, 1)
	if src.found() {
		go func() {
			bin, err := src.buildStatic(gateCtx, "cmd/podgate-gate", filepath.Join(dir, GateBinary))
			gate <- gateBuild{bin, err}
		}()
	} else {
		gate <- gateBuild{}
	}
	img, err := podgateImage(ctx, dir, executable, static, src)
	if err != nil {
		cancel()
		<-gate // the build writes into dir: over before BuildImage returns
		return Image{}, err
	}
	g := <-gate
	img.GateRef = img.Ref
	gateHow := "the gate from podgate's image (not run from podgate's source tree: no podgate-gate to build)"
	if src.found() {
		if g.err != nil {
			return Image{}, fmt.Errorf("the gate's image: %w (run cluster up outside the source tree for a gate from podgate's own image)", g.err)
		}
		gi, digest, err := ociimage.Build(g.bin, GateImageTag)
		if err != nil {
			return Image{}, err
		}
		if err := ociimage.WriteLayout(dir, GateImageTag, gi); err != nil {
			return Image{}, err
		}
		img.GateRef, gateHow = deploy.GateImage+"@"+digest.String(), "the gate podgate-gate built from "+src.String()
	}
	img.Built = fmt.Sprintf("%s, %s, in %s", img.Built, gateHow, time.Since(begin).Round(10*time.Millisecond))
	return img, nil
}

// gateBuild is podgate-gate's build from the source tree: the binary, or
// why not ("" with no error: not built).
type gateBuild struct {
	bin string
	err error
}

// podgateImage writes podgate's image into the layout dir: executable
// when it is static, else podgate built from src. Its Built says which.
func podgateImage(ctx context.Context, dir, executable string, static bool, src source) (Image, error) {
	bin, how := executable, "podgate's own binary"
	if !static {
		if !src.found() {
			return Image{}, fmt.Errorf("podgate's image: %s is dynamically linked, and an image holds nothing but a static binary: %w", executable, errNoSource)
		}
		var err error
		if bin, err = src.buildStatic(ctx, "cmd/podgate", filepath.Join(dir, StaticBinary)); err != nil {
			return Image{}, fmt.Errorf("podgate's image: %s is dynamically linked, and an image holds nothing but a static binary: %w", executable, err)
		}
		how = "a static podgate built from " + src.String()
	}
	img, digest, err := ociimage.Build(bin, ImageTag)
	if err != nil {
		return Image{}, err
	}
	if err := ociimage.WriteLayout(dir, ImageTag, img); err != nil {
		return Image{}, err
	}
	return Image{Ref: deploy.Image + "@" + digest.String(), Built: how}, nil
}

// isStatic reports whether the ELF binary at path has no program
// interpreter (no dynamic loader).
func isStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// StaticBinary and GateBinary are where BuildImage puts a podgate and a
// podgate-gate it builds, in the layout's directory.
const (
	StaticBinary = "podgate"
	GateBinary   = "podgate-gate"
)

// errNoSource says what to do when a static podgate is needed and there
// is no source to build one from.
var errNoSource = errors.New("run cluster up from podgate's source tree (it builds a static podgate there), install podgate with `go install " + modulePath + "/cmd/podgate@VERSION` (cluster up then builds a static one of that version), use a podgate built with CGO_ENABLED=0 (hack/image.sh's, or CGO_ENABLED=0 go build ./cmd/podgate), or --no-install")

// source is where a static podgate and podgate-gate can be built from:
// the source tree at root, or the module at version; neither: none.
type source struct {
	root, version string
}

// sourceOf is the source tree the working directory is in, else the
// module version a dynamically linked executable was installed from.
func sourceOf(ctx context.Context, executable string, static bool) source {
	if root, ok := sourceTree(ctx); ok {
		return source{root: root}
	}
	if !static {
		return source{version: installedVersion(executable)}
	}
	return source{}
}

func (s source) found() bool { return s.root != "" || s.version != "" }

func (s source) String() string {
	if s.root != "" {
		return "the source tree"
	}
	return "module " + modulePath + "@" + s.version
}

// installedVersion is the version of podgate's module that the binary at
// executable was built from by `go install …@VERSION`; "" when it says
// none (a build in a source tree says "(devel)", or a VCS version of a
// tree with local changes, which no module proxy has).
func installedVersion(executable string) string {
	bi, err := buildinfo.ReadFile(executable)
	if err != nil || bi.Main.Path != modulePath {
		return ""
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" || strings.Contains(v, "+dirty") {
		return ""
	}
	return v
}

// sourceTree is the root of podgate's source tree when the working
// directory is in one (its module is podgate's).
func sourceTree(ctx context.Context) (string, bool) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", false
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if mod, err := moduleOf(filepath.Join(root, "go.mod")); err != nil || mod != modulePath {
		return "", false
	}
	return root, true
}

// buildStatic builds the command pkg (cmd/NAME) with CGO_ENABLED=0 into
// out: `go build` in the source tree, or `go install` of the module
// version (the go command fetches it as it fetched it for the user).
func (s source) buildStatic(ctx context.Context, pkg, out string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./"+pkg)
	cmd.Dir, cmd.Env = s.root, append(os.Environ(), "CGO_ENABLED=0")
	installed := ""
	if s.root == "" {
		gobin, err := os.MkdirTemp(filepath.Dir(out), ".install-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(gobin)
		cmd = exec.CommandContext(ctx, "go", "install", "-trimpath", modulePath+"/"+pkg+"@"+s.version)
		cmd.Dir, cmd.Env = gobin, append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+gobin)
		installed = filepath.Join(gobin, filepath.Base(pkg))
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("CGO_ENABLED=0 %s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	if installed != "" {
		if err := os.Rename(installed, out); err != nil {
			return "", err
		}
	}
	return out, nil
}

// moduleOf is the module path a go.mod declares.
func moduleOf(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s declares no module", gomod)
}

package install

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podgate/podgate/deploy"
	"github.com/podgate/podgate/ociimage"
)

// modulePath is podgate's Go module, built from source when podgate
// itself is no static binary.
const modulePath = "github.com/podgate/podgate"

// ImageTag is the tag of podgate's image in the cluster's layout; the
// manifests name the image by digest.
const ImageTag = deploy.Image + ":cluster"

// Image is podgate's image in the cluster's OCI layout.
type Image struct {
	// Ref is the image by digest, as the install's manifests name it.
	Ref string
	// Built says what the image holds and how long it took.
	Built string
}

// BuildImage puts a static podgate into an OCI image in the layout dir
// (the one the node runs images from): the podgate binary at executable
// when it is static, as scripts/image.sh builds it; else one built from
// podgate's source with CGO_ENABLED=0 (into dir), when this is run from
// there (go run ./cmd/podgate, say). An image holds nothing but the
// binary, so a dynamically linked one could not run from it.
func BuildImage(ctx context.Context, dir, executable string) (Image, error) {
	begin := time.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Image{}, fmt.Errorf("podgate's image: %w", err)
	}
	bin, how := executable, "podgate's own binary"
	static, err := isStatic(bin)
	if err != nil {
		return Image{}, fmt.Errorf("podgate's image: %w", err)
	}
	if !static {
		if bin, err = buildStatic(ctx, dir); err != nil {
			return Image{}, fmt.Errorf("podgate's image: %s is dynamically linked, and an image holds nothing but a static binary: %w", executable, err)
		}
		how = "a static podgate built from the source tree"
	}
	img, digest, err := ociimage.Build(bin, ImageTag)
	if err != nil {
		return Image{}, err
	}
	if err := ociimage.WriteLayout(dir, ImageTag, img); err != nil {
		return Image{}, err
	}
	return Image{
		Ref:   deploy.Image + "@" + digest.String(),
		Built: fmt.Sprintf("%s in %s", how, time.Since(begin).Round(10*time.Millisecond)),
	}, nil
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

// StaticBinary is where BuildImage puts a podgate it builds, in the
// layout's directory.
const StaticBinary = "podgate"

// buildStatic builds podgate with CGO_ENABLED=0 into dir, from the
// module of the working directory, which must be podgate's.
func buildStatic(ctx context.Context, dir string) (string, error) {
	noSource := errors.New("run cluster up from podgate's source tree (it builds a static podgate there), use a podgate built with CGO_ENABLED=0 (scripts/image.sh's, or CGO_ENABLED=0 go build ./cmd/podgate), or --no-install")
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", noSource
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if mod, err := moduleOf(filepath.Join(root, "go.mod")); err != nil || mod != modulePath {
		return "", noSource
	}
	out := filepath.Join(dir, StaticBinary)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd/podgate")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("CGO_ENABLED=0 go build ./cmd/podgate in %s: %w\n%s", root, err, stderr.String())
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

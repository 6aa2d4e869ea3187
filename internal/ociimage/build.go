package ociimage

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BinaryPath is where the image holds the binary, and its entrypoint.
const BinaryPath = "/podgate"

// imagePath is the image's PATH. The gate container the injector adds
// runs the image's entrypoint and its startup probe `/podgate gate wait`,
// but gates injected by older podgates say `command: [podgate]`; a
// container runtime finds a command without a slash on the container's
// PATH, which starts from the image's, so "/" on it makes `podgate` the
// image's /podgate (ko puts its /ko-app on PATH the same way).
const imagePath = "PATH=/"

// User is the user every image of podgate runs as: 65532:65532, the
// nonroot user of the distroless images. None of podgate's programs in
// an image (the gate, the webhook, the activator) writes a file or needs
// a capability, so they run under Kubernetes' restricted profile (Knative
// gives its queue container runAsNonRoot, readOnlyRootFilesystem, no
// capabilities), which refuses an image whose user is root or unset.
const User = "65532:65532"

// epoch is every timestamp in the image: the Unix epoch, as ko and
// SOURCE_DATE_EPOCH builds use, so that the time of the build does not
// change the digest.
var epoch = time.Unix(0, 0).UTC()

// Build makes an OCI image of the static Linux binary at binaryPath: one
// layer holding it at /podgate (mode 0755, owned by root), entrypoint
// /podgate, user User (not root), the platform the binary was built for. Nothing else goes in —
// no timestamps, no file metadata, not ref — so the same binary always
// gives the same digest, which Build returns with the image. ref (the
// NAME:TAG the image is meant for) is checked here so that a bad one fails
// before the work.
func Build(binaryPath, ref string) (v1.Image, v1.Hash, error) {
	fail := func(err error) (v1.Image, v1.Hash, error) {
		return nil, v1.Hash{}, fmt.Errorf("build image %s of %s: %w", ref, binaryPath, err)
	}
	if _, err := parseTag(ref); err != nil {
		return fail(err)
	}
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return fail(err)
	}
	plat, err := platformOf(bin)
	if err != nil {
		return fail(err)
	}
	layerTar, err := singleFileTar(strings.TrimPrefix(BinaryPath, "/"), bin)
	if err != nil {
		return fail(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return fail(err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{
		Created:      v1.Time{Time: epoch},
		OS:           plat.OS,
		Architecture: plat.Architecture,
		Variant:      plat.Variant,
		Config: v1.Config{
			Entrypoint: []string{BinaryPath},
			Env:        []string{imagePath},
			User:       User,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return fail(err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "podgate binary at " + BinaryPath},
	})
	if err != nil {
		return fail(err)
	}
	dig, err := img.Digest()
	if err != nil {
		return fail(err)
	}
	return img, dig, nil
}

// singleFileTar is a layer holding one executable file, every header
// field fixed so that only the content matters.
func singleFileTar(name string, content []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(content)),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// elfArch names ELF machines as OCI platforms do (GOARCH names), for
// binaries that are not Go's.
var elfArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_386:     "386",
	elf.EM_ARM:     "arm",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
	elf.EM_RISCV:   "riscv64",
}

// platformOf reads the platform the binary runs on, and refuses one the
// image could not run: an image with a single file has no dynamic loader
// or libc, so the binary must be a static Linux executable.
func platformOf(bin []byte) (v1.Platform, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return v1.Platform{}, fmt.Errorf("not a Linux (ELF) executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return v1.Platform{}, errors.New("dynamically linked: the image holds nothing but this file, so it needs a static binary (CGO_ENABLED=0 go build)")
		}
	}
	plat := v1.Platform{OS: "linux", Architecture: elfArch[f.Machine]}
	if info, err := buildinfo.Read(bytes.NewReader(bin)); err == nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "GOOS":
				plat.OS = s.Value
			case "GOARCH":
				plat.Architecture = s.Value
			case "GOARM":
				// The image-spec's variant of arm: v6, v7.
				plat.Variant = "v" + strings.SplitN(s.Value, ",", 2)[0]
			}
		}
	}
	if plat.OS != "linux" {
		return v1.Platform{}, fmt.Errorf("built for %s: images run on linux", plat.OS)
	}
	if plat.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("ELF machine %s: unknown architecture", f.Machine)
	}
	if plat.Architecture != "arm" {
		plat.Variant = ""
	}
	return plat, nil
}

// WriteLayout adds img to the OCI image layout dir under ref (NAME:TAG),
// creating the layout if needed: its index.json descriptor carries the
// tag as org.opencontainers.image.ref.name and the full reference as
// io.containerd.image.name. An image already there under the same
// reference is replaced, and blobs no image uses any more are removed,
// so that rebuilding into one layout does not pile up binaries.
func WriteLayout(dir, ref string, img v1.Image) error {
	tag, err := parseTag(ref)
	if err != nil {
		return fmt.Errorf("write image to OCI layout %s: %w", dir, err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "index.json")); !errors.Is(statErr, os.ErrNotExist) {
			return fmt.Errorf("write image %s to OCI layout %s: %w", ref, dir, err)
		}
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("create OCI layout %s: %w", dir, err)
		}
	}
	same := func(d v1.Descriptor) bool { return descriptorName(d) == tag.Name() }
	anns := map[string]string{AnnotationRefName: tag.TagStr(), AnnotationImageName: tag.Name()}
	if err := p.ReplaceImage(img, same, layout.WithAnnotations(anns)); err != nil {
		return fmt.Errorf("write image %s to OCI layout %s: %w", ref, dir, err)
	}
	if err := pruneBlobs(dir); err != nil {
		return fmt.Errorf("OCI layout %s: remove unused blobs: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img under ref (NAME:TAG) as a tarball that `docker
// load`, `kind load image-archive` and `ctr images import` read.
func WriteTarball(path, ref string, img v1.Image) error {
	return WriteTarballs(path, map[string]v1.Image{ref: img})
}

// WriteTarballs writes several images, each under its ref (NAME:TAG), as
// one tarball (podgate's image and the gate's, loaded together).
func WriteTarballs(path string, images map[string]v1.Image) error {
	refs := make(map[name.Reference]v1.Image, len(images))
	for ref, img := range images {
		tag, err := parseTag(ref)
		if err != nil {
			return fmt.Errorf("write image tarball %s: %w", path, err)
		}
		refs[tag] = img
	}
	if err := tarball.MultiRefWriteToFile(path, refs); err != nil {
		return fmt.Errorf("write images %s to tarball %s: %w", strings.Join(slices.Sorted(maps.Keys(images)), ", "), path, err)
	}
	return nil
}

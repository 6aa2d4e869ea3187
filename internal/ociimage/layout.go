package ociimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ErrNotFound is what Resolve returns (wrapped) for a reference the
// layout holds no image for.
var ErrNotFound = errors.New("not in the layout")

// maxMetadata bounds the JSON blobs (index, manifests, config) read into
// memory: real ones are a few KB.
const maxMetadata = 4 << 20

// Layout is an OCI image layout directory whose images run as local
// processes.
type Layout struct {
	// Dir is the layout: oci-layout, index.json and blobs/.
	Dir string
	// CacheDir is where entrypoint programs are extracted, under their
	// layer's digest (default DefaultCacheDir()).
	CacheDir string
}

// Image is an image of a layout, ready to run as a process.
type Image struct {
	// Digest is the image manifest's digest.
	Digest v1.Hash
	// Binary is the program the image runs, extracted from its layer.
	Binary string
	// Program is that program's path in the image (/podgate in podgate's
	// images): an exec in a container of the image names it so.
	Program string
	// Entrypoint and Cmd are the image's, their program (the first word
	// of Entrypoint, or of Cmd when there is no Entrypoint) replaced by
	// Binary.
	Entrypoint, Cmd []string
	// User is the image's user as its config says it ("" when unset: a
	// container runtime runs it as root): UID[:GID] or a name.
	User string
}

// OpenLayout is the OCI image layout in dir, made absolute and checked to
// be one (it has an oci-layout file) so that a wrong path fails at once;
// the images in it are checked as they are resolved. Its cache is
// DefaultCacheDir().
func OpenLayout(dir string) (Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, err
	}
	if _, err := os.Stat(filepath.Join(abs, "oci-layout")); err != nil {
		return Layout{}, fmt.Errorf("not an OCI image layout (no oci-layout file): %w", err)
	}
	cache, err := DefaultCacheDir()
	if err != nil {
		return Layout{}, err
	}
	return Layout{Dir: abs, CacheDir: cache}, nil
}

// DefaultCacheDir is where Resolve extracts programs unless told: the
// user's cache directory ($XDG_CACHE_HOME or ~/.cache)/podgate/images.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for extracted images (set XDG_CACHE_HOME): %w", err)
	}
	return filepath.Join(dir, "podgate", "images"), nil
}

// Resolve finds ref in the OCI image layout layoutDir and extracts its
// entrypoint program into DefaultCacheDir(); see Layout.Resolve.
func Resolve(layoutDir, ref string) (binaryPath string, digest v1.Hash, err error) {
	img, err := Layout{Dir: layoutDir}.Resolve(ref)
	return img.Binary, img.Digest, err
}

// Resolve finds ref in the layout — NAME:TAG by the full name its
// descriptor carries (a descriptor with only a bare tag is found by
// digest alone: it does not say which repository the tag is of), or
// NAME[:TAG]@sha256:HEX by digest whatever the name — and returns it
// ready to run. Every blob it reads is checked against its digest and
// size, and the layer's content against the config's diff_id, so a
// changed blob is refused rather than run; a program is extracted only
// from a checked layer, and kept under the layer's digest, so later
// calls find it there without reading the layer again. The errors name
// ref and the layout; one for a reference the layout does not hold wraps
// ErrNotFound.
func (l Layout) Resolve(ref string) (Image, error) {
	img, err := l.resolve(ref)
	if err != nil {
		return Image{}, fmt.Errorf("image %q in OCI layout %s: %w", ref, l.Dir, err)
	}
	return img, nil
}

// Entrypoint is Resolve in the form the node agent asks (runtime's
// images.Store): found is false, with no error, for an image the layout
// does not hold, which then runs as if there were no layout.
func (l Layout) Entrypoint(image string) (entrypoint, cmd []string, program string, found bool, err error) {
	if _, perr := parseReference(image); perr != nil {
		// Not a name a layout can hold.
		return nil, nil, "", false, nil
	}
	img, err := l.Resolve(image)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, "", false, nil
	}
	if err != nil {
		return nil, nil, "", false, err
	}
	return img.Entrypoint, img.Cmd, img.Program, true, nil
}

// User is the user image runs as, in the form the node agent asks
// (images.UserStore): its config's User ("" when unset), found false,
// with no error, for an image the layout does not hold.
func (l Layout) User(image string) (user string, found bool, err error) {
	if _, perr := parseReference(image); perr != nil {
		return "", false, nil
	}
	img, err := l.Resolve(image)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return img.User, true, nil
}

func (l Layout) resolve(raw string) (Image, error) {
	ref, err := parseReference(raw)
	if err != nil {
		return Image{}, err
	}
	desc, err := l.find(ref)
	if err != nil {
		return Image{}, err
	}
	mdesc, manifest, err := l.manifest(desc, 0)
	if err != nil {
		return Image{}, err
	}
	cfgRaw, err := l.readMetadata(manifest.Config, "config")
	if err != nil {
		return Image{}, err
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(cfgRaw, &cfg); err != nil {
		return Image{}, fmt.Errorf("config %s: %w", manifest.Config.Digest, err)
	}
	if cfg.OS != "" && (cfg.OS != goruntime.GOOS || cfg.Architecture != goruntime.GOARCH) {
		return Image{}, fmt.Errorf("the image is for %s/%s; this machine is %s/%s", cfg.OS, cfg.Architecture, goruntime.GOOS, goruntime.GOARCH)
	}
	if len(cfg.RootFS.DiffIDs) != len(manifest.Layers) {
		return Image{}, fmt.Errorf("config %s lists %d diff_ids for the manifest's %d layers", manifest.Config.Digest, len(cfg.RootFS.DiffIDs), len(manifest.Layers))
	}
	argv := cfg.Config.Entrypoint
	if len(argv) == 0 {
		argv = cfg.Config.Cmd
	}
	if len(argv) == 0 {
		return Image{}, errors.New("the image has neither an entrypoint nor a cmd: nothing to run")
	}
	if !path.IsAbs(argv[0]) {
		return Image{}, fmt.Errorf("the image's program %q is not an absolute path: podgate extracts the program by its path in the image", argv[0])
	}
	cache := l.CacheDir
	if cache == "" {
		if cache, err = DefaultCacheDir(); err != nil {
			return Image{}, err
		}
	}
	bin, err := extract(l.Dir, cache, manifest.Layers, cfg.RootFS.DiffIDs, argv[0])
	if err != nil {
		return Image{}, err
	}
	img := Image{Digest: mdesc.Digest, Binary: bin, Program: argv[0], User: cfg.Config.User,
		Entrypoint: append([]string{}, cfg.Config.Entrypoint...), Cmd: append([]string{}, cfg.Config.Cmd...)}
	if len(img.Entrypoint) > 0 {
		img.Entrypoint[0] = bin
	} else {
		img.Cmd[0] = bin
	}
	return img, nil
}

// find picks ref's descriptor in index.json; of several, the last written
// wins, as when a tool appends an image under a tag that was there.
func (l Layout) find(ref reference) (v1.Descriptor, error) {
	if _, err := os.Stat(filepath.Join(l.Dir, "oci-layout")); err != nil {
		return v1.Descriptor{}, fmt.Errorf("not an OCI image layout: %w", err)
	}
	raw, err := readLimited(filepath.Join(l.Dir, "index.json"))
	if err != nil {
		return v1.Descriptor{}, err
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(raw, &index); err != nil {
		return v1.Descriptor{}, fmt.Errorf("index.json: %w", err)
	}
	var held []string
	for i := len(index.Manifests) - 1; i >= 0; i-- {
		d := index.Manifests[i]
		n := descriptorName(d)
		if ref.hasDigest() && d.Digest == ref.digest || !ref.hasDigest() && n != "" && n == ref.tag.Name() {
			return d, nil
		}
		switch {
		case n != "":
			held = append(held, n+"@"+d.Digest.String())
		case d.Annotations[AnnotationRefName] != "":
			held = append(held, fmt.Sprintf("tag %q of no named repository, @%s", d.Annotations[AnnotationRefName], d.Digest))
		default:
			held = append(held, "@"+d.Digest.String())
		}
	}
	if len(held) == 0 {
		return v1.Descriptor{}, fmt.Errorf("%w, which holds no image", ErrNotFound)
	}
	return v1.Descriptor{}, fmt.Errorf("%w, which holds %s", ErrNotFound, strings.Join(held, ", "))
}

// manifest reads the image manifest d names; an index (a multi-platform
// image) is followed to this machine's platform, one level deep.
func (l Layout) manifest(d v1.Descriptor, depth int) (v1.Descriptor, *v1.Manifest, error) {
	raw, err := l.readMetadata(d, "manifest")
	if err != nil {
		return d, nil, err
	}
	switch {
	case d.MediaType.IsIndex() && depth == 0:
		var idx v1.IndexManifest
		if err := json.Unmarshal(raw, &idx); err != nil {
			return d, nil, fmt.Errorf("index %s: %w", d.Digest, err)
		}
		for _, m := range idx.Manifests {
			if m.Platform != nil && m.Platform.OS == goruntime.GOOS && m.Platform.Architecture == goruntime.GOARCH && m.MediaType.IsImage() {
				return l.manifest(m, depth+1)
			}
		}
		return d, nil, fmt.Errorf("index %s has no image for %s/%s", d.Digest, goruntime.GOOS, goruntime.GOARCH)
	case d.MediaType.IsImage():
		var m v1.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return d, nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
		return d, &m, nil
	default:
		return d, nil, fmt.Errorf("descriptor %s: media type %q is not an image manifest", d.Digest, d.MediaType)
	}
}

// readMetadata reads a small blob and checks it against d's digest and
// size.
func (l Layout) readMetadata(d v1.Descriptor, what string) ([]byte, error) {
	p, err := blobPath(l.Dir, d.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	raw, err := readLimited(p)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, d.Digest, err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != d.Digest.Hex {
		return nil, fmt.Errorf("%s %s: digest mismatch: the blob's content is sha256:%s", what, d.Digest, got)
	}
	if int64(len(raw)) != d.Size {
		return nil, fmt.Errorf("%s %s: size mismatch: the blob has %d bytes, its descriptor says %d", what, d.Digest, len(raw), d.Size)
	}
	return raw, nil
}

// blobPath is where the layout keeps a blob; only sha256 is read.
func blobPath(dir string, h v1.Hash) (string, error) {
	if h.Algorithm != "sha256" || len(h.Hex) != sha256.Size*2 {
		return "", fmt.Errorf("digest %q: only sha256 digests are supported", h)
	}
	return filepath.Join(dir, "blobs", h.Algorithm, h.Hex), nil
}

func readLimited(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxMetadata+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxMetadata {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxMetadata)
	}
	return raw, nil
}

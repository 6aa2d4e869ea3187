package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/podgate/podgate/ociimage"
	"github.com/podgate/podgate/runtime/images"
)

// imageLayoutUsage is the --image-layout flag's help, the same for every
// subcommand that runs pods.
const imageLayoutUsage = "OCI image layout DIR (scripts/image.sh writes one): a container without a command whose image (NAME:TAG or NAME@sha256:…) is there runs the image's entrypoint, extracted and digest-checked; other images as without it"

// withImageLayout makes im run the images of the OCI image layout dir
// (--image-layout); "" leaves im as it is. The directory is checked now,
// so a wrong path fails before anything starts; the images in it are
// checked as the pods that name them are.
func withImageLayout(im images.Map, dir string) (images.Map, error) {
	if dir == "" {
		return im, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return im, fmt.Errorf("--image-layout %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "oci-layout")); err != nil {
		return im, fmt.Errorf("--image-layout %s: not an OCI image layout (no oci-layout file): %w", dir, err)
	}
	cache, err := ociimage.DefaultCacheDir()
	if err != nil {
		return im, fmt.Errorf("--image-layout %s: %w", dir, err)
	}
	im.Store = ociimage.Layout{Dir: abs, CacheDir: cache}
	return im, nil
}

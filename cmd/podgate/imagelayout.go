package main

import (
	"fmt"

	"github.com/podgate/podgate/ociimage"
	"github.com/podgate/podgate/runtime/images"
)

// imageLayoutUsage is the --image-layout flag's help, the same for every
// subcommand that runs pods.
const imageLayoutUsage = "OCI image layout DIR (scripts/image.sh writes one): a container without a command whose image (NAME:TAG or NAME@sha256:…) is there runs the image's entrypoint, extracted and digest-checked; other images as without it"

// checkImageFlags refuses an --image that is not NAME=PATH as a usage
// error (whether PATH runs is images.FromFlags's question, later).
func checkImageFlags(flags []string) error {
	if err := images.CheckFlags(flags); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// withImageLayout makes im run the images of the OCI image layout dir
// (--image-layout); "" leaves im as it is. The directory is checked now
// (ociimage.OpenLayout), so a wrong path fails before anything starts.
func withImageLayout(im images.Map, dir string) (images.Map, error) {
	if dir == "" {
		return im, nil
	}
	l, err := ociimage.OpenLayout(dir)
	if err != nil {
		return im, fmt.Errorf("--image-layout %s: %w", dir, err)
	}
	im.Store = l
	return im, nil
}

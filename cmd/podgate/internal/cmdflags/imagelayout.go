// Package cmdflags holds the flags more than one of podgate's commands
// take, with their checks: --image-layout and --image, --record and
// --record-limit, and the rule that a text flag given is not empty and a
// duration given is positive.
package cmdflags

import (
	"fmt"

	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/node/images"
)

// ImageLayoutUsage is the --image-layout flag's help, the same for every
// subcommand that runs pods.
const ImageLayoutUsage = "OCI image layout DIR (hack/image.sh writes one): a container without a command whose image (NAME:TAG or NAME@sha256:…) is there runs the image's entrypoint, extracted and digest-checked; other images as without it"

// CheckImageFlags refuses an --image that is not NAME=PATH as a usage
// error (whether PATH runs is images.FromFlags's question, later).
func CheckImageFlags(flags []string) error {
	if err := images.CheckFlags(flags); err != nil {
		return command.Usagef("%v", err)
	}
	return nil
}

// WithImageLayout makes im run the images of the OCI image layout dir
// (--image-layout); "" leaves im as it is. The directory is checked now
// (ociimage.OpenLayout), so a wrong path fails before anything starts.
func WithImageLayout(im images.Map, dir string) (images.Map, error) {
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

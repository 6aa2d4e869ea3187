// Command image writes OCI images of static binaries into an OCI image
// layout (and, if asked, one tarball of them all) and prints each image's
// reference with its digest, one a line, in the order given.
// hack/image.sh runs it on the podgate and podgate-gate binaries it
// builds:
//
//	go run ./hack/image -binary BIN -ref ghcr.io/podgate/podgate:v1 [-binary BIN2 -ref REF2 ...] -layout DIR [-tarball FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/podgate/podgate/internal/ociimage"
)

// image is one -binary with its -ref.
type image struct{ binary, ref string }

func main() {
	var binaries, refs []string
	flag.Func("binary", "a static Linux binary to put at /podgate, each followed by its -ref (required, repeatable)", func(s string) error {
		binaries = append(binaries, s)
		return nil
	})
	flag.Func("ref", "NAME:TAG of the image of the -binary before it (required, repeatable)", func(s string) error {
		refs = append(refs, s)
		return nil
	})
	layoutDir := flag.String("layout", "", "OCI image layout directory to add the images to, created if absent (required)")
	tarballPath := flag.String("tarball", "", "also write the images as one tarball for docker load / kind load image-archive")
	flag.Parse()
	if len(binaries) == 0 || len(binaries) != len(refs) || *layoutDir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -binary BIN -ref NAME:TAG [-binary BIN -ref NAME:TAG ...] -layout DIR [-tarball FILE]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	var images []image
	for i := range binaries {
		images = append(images, image{binaries[i], refs[i]})
	}
	if err := run(images, *layoutDir, *tarballPath, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds every image, adds it to the layout and prints its reference
// with its digest on stdout (progress on stderr); the tarball, if asked,
// holds them all.
func run(images []image, layoutDir, tarballPath string, stdout, stderr io.Writer) error {
	built := map[string]v1.Image{}
	var lines []string
	for _, im := range images {
		if _, dup := built[im.ref]; dup {
			return errors.New("-ref " + im.ref + " given twice")
		}
		start := time.Now()
		img, digest, err := ociimage.Build(im.binary, im.ref)
		if err != nil {
			return err
		}
		if err := ociimage.WriteLayout(layoutDir, im.ref, img); err != nil {
			return err
		}
		mb, size, err := sizes(img)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "image: %s in %s: %.1f MB compressed, manifest %d bytes, built and written in %s\n",
			im.ref, layoutDir, mb, size, time.Since(start).Round(time.Millisecond))
		built[im.ref] = img
		lines = append(lines, fmt.Sprintf("%s@%s", im.ref, digest))
	}
	if tarballPath != "" {
		if err := ociimage.WriteTarballs(tarballPath, built); err != nil {
			return err
		}
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// sizes are an image's compressed layers in MB and its manifest's bytes.
func sizes(img v1.Image) (float64, int64, error) {
	size, err := img.Size()
	if err != nil {
		return 0, 0, err
	}
	ls, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	var layers int64
	for _, l := range ls {
		n, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		layers += n
	}
	return float64(layers) / 1e6, size, nil
}

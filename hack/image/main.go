// Command image writes an OCI image of a static binary into an OCI image
// layout (and, if asked, a tarball) and prints the image's reference with
// its digest. scripts/image.sh runs it on the podgate binary it builds:
//
//	go run ./hack/image -binary BIN -ref ghcr.io/podgate/podgate:v1 -layout DIR [-tarball FILE]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/podgate/podgate/ociimage"
)

func main() {
	binary := flag.String("binary", "", "the static Linux binary to put at /podgate (required)")
	ref := flag.String("ref", "", "NAME:TAG of the image (required)")
	layoutDir := flag.String("layout", "", "OCI image layout directory to add the image to, created if absent (required)")
	tarballPath := flag.String("tarball", "", "also write the image as a tarball for docker load / kind load image-archive")
	flag.Parse()
	if *binary == "" || *ref == "" || *layoutDir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image -binary BIN -ref NAME:TAG -layout DIR [-tarball FILE]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	if err := run(*binary, *ref, *layoutDir, *tarballPath); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, ref, layoutDir, tarballPath string) error {
	start := time.Now()
	img, digest, err := ociimage.Build(binary, ref)
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(layoutDir, ref, img); err != nil {
		return err
	}
	if tarballPath != "" {
		if err := ociimage.WriteTarball(tarballPath, ref, img); err != nil {
			return err
		}
	}
	size, err := img.Size()
	if err != nil {
		return err
	}
	var layers int64
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		n, err := l.Size()
		if err != nil {
			return err
		}
		layers += n
	}
	fmt.Fprintf(os.Stderr, "image: %s in %s: %.1f MB compressed, manifest %d bytes, built and written in %s\n",
		ref, layoutDir, float64(layers)/1e6, size, time.Since(start).Round(time.Millisecond))
	fmt.Printf("%s@%s\n", ref, digest)
	return nil
}

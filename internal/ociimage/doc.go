// Package ociimage makes and reads OCI images of podgate's one static
// binary, without docker or a registry.
//
// The writer side (Build, WriteLayout, WriteTarball) makes an image of a
// single layer holding the binary at /podgate, its entrypoint, and writes
// it as an OCI image layout directory (what `crane`, `skopeo`, containerd
// and registries' push tools read) or as a tarball `docker load` and
// `kind load image-archive` take. Nothing in the image depends on when or
// where it was built, so the same binary gives the same digest.
//
// The reader side (Layout, Resolve) lets the node agent run an image as a
// process: it finds an image in a layout by tag or by digest, verifies
// every blob it reads against its digest, and extracts the entrypoint
// program into a cache keyed by the layer's digest.
package ociimage

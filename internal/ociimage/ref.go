package ociimage

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Annotations on a layout's index.json descriptors that name an image.
const (
	// AnnotationRefName is the OCI layout's name of an image: its tag
	// ("v1.2.3"), as the image-spec, skopeo and crane write it.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationImageName is the image's full reference
	// ("ghcr.io/podgate/podgate:v1.2.3"), as containerd writes it on export
	// and reads it on `ctr images import`.
	AnnotationImageName = "io.containerd.image.name"
)

// reference is an image reference read the way a container runtime reads
// it: a repository with a tag (latest when none is written), and an
// optional digest, which, when present, alone decides which image it is.
type reference struct {
	tag    name.Tag
	digest v1.Hash
}

func (r reference) hasDigest() bool { return r.digest != (v1.Hash{}) }

// parseReference reads NAME[:TAG][@sha256:HEX]. go-containerregistry's
// parser refuses a tag and a digest together; Kubernetes manifests (and
// hack/image.sh's output) write both, so the digest is split off here.
func parseReference(s string) (reference, error) {
	var r reference
	repo, dig, hasDigest := strings.Cut(s, "@")
	if hasDigest {
		h, err := v1.NewHash(dig)
		if err != nil {
			return r, fmt.Errorf("image reference %q: digest: %w", s, err)
		}
		if h.Algorithm != "sha256" {
			return r, fmt.Errorf("image reference %q: digest algorithm %q: only sha256 is supported", s, h.Algorithm)
		}
		r.digest = h
	}
	t, err := name.NewTag(repo)
	if err != nil {
		return r, fmt.Errorf("image reference %q: %w", s, err)
	}
	r.tag = t
	return r, nil
}

// parseTag reads the NAME:TAG an image is written under; a digest is the
// image's own, so a reference to write under must not carry one.
func parseTag(s string) (name.Tag, error) {
	if strings.Contains(s, "@") {
		return name.Tag{}, fmt.Errorf("image reference %q: an image is written under a tag; its digest comes from its content", s)
	}
	t, err := name.NewTag(s)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", s, err)
	}
	return t, nil
}

// descriptorName is the full name a layout's descriptor carries, "" when
// it has none: containerd's annotation, or a ref.name that is a full
// reference (some tools write one there) rather than a bare tag.
func descriptorName(d v1.Descriptor) string {
	for _, raw := range []string{d.Annotations[AnnotationImageName], d.Annotations[AnnotationRefName]} {
		if !strings.Contains(raw, "/") {
			continue
		}
		if t, err := name.NewTag(raw); err == nil {
			return t.Name()
		}
	}
	return ""
}

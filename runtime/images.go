package runtime

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/podspec"
)

// TestappImage is the test app's image; podgate runs it as its own
// `testapp` subcommand.
const TestappImage = "ghcr.io/podgate/testapp"

// Images resolves container images to local entrypoints. There are no
// images locally: a container runs its command, and an image only matters
// when the container gives no command — then its entrypoint comes from
// here.
type Images struct {
	// Entrypoints maps an image (as written, or without its tag or digest)
	// to the argv that stands for its ENTRYPOINT.
	Entrypoints map[string][]string
	// Self, when set, is the program a command "podgate" runs: the gate
	// container the injector adds says `command: [podgate]`, which locally
	// is this binary wherever it lives.
	Self string
	// Store, when set, holds images on this machine (podgate's
	// --image-layout): a container without a command whose image it holds
	// runs the image's entrypoint from there, before Entrypoints is asked
	// (a container with a command runs it on this host, Store or not).
	Store ImageStore
}

// ImageStore holds images on this machine and hands out what a container
// of one runs (ociimage.Layout: an OCI image layout, the image's program
// extracted from its checked layer).
type ImageStore interface {
	// Entrypoint returns image's ENTRYPOINT and CMD, their program a path
	// on this machine; found is false, with no error, for an image the
	// store does not hold. An error means it holds the image but cannot
	// run it (a blob that fails its digest, another platform).
	Entrypoint(image string) (entrypoint, cmd []string, found bool, err error)
}

// DefaultImages maps the test app's image to this binary's `testapp`
// subcommand and the gate's image, and the command "podgate", to this
// binary.
func DefaultImages() (Images, error) {
	exe, err := os.Executable()
	if err != nil {
		return Images{}, fmt.Errorf("find own executable for %s: %w", TestappImage, err)
	}
	return Images{
		Entrypoints: map[string][]string{
			TestappImage:         {exe, "testapp"},
			gateenv.DefaultImage: {exe},
		},
		Self: exe,
	}, nil
}

// Set adds an --image NAME=PATH mapping.
func (im *Images) Set(image string, entrypoint ...string) {
	if im.Entrypoints == nil {
		im.Entrypoints = map[string][]string{}
	}
	im.Entrypoints[image] = entrypoint
}

// entrypoint finds image's entrypoint: the exact name first, then the name
// without a digest or tag (ghcr.io/podgate/testapp:latest is the test app).
func (im Images) entrypoint(image string) ([]string, bool) {
	if ep, ok := im.Entrypoints[image]; ok {
		return ep, true
	}
	if ep, ok := im.Entrypoints[imageRepository(image)]; ok {
		return ep, true
	}
	return nil, false
}

// imageRepository strips a digest (@sha256:…) and a tag (:v1; a colon after
// the last slash, so a registry port stays).
func imageRepository(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	return image
}

// argv is the container's command line before $(VAR) expansion, as a
// container runtime builds it: command replaces the image's entrypoint;
// args replace its default arguments (an image of the Store has its CMD;
// one mapped in Entrypoints has none).
func (im Images) argv(image string, command, args []string, path *field.Path) ([]string, *field.Error) {
	if len(command) > 0 {
		argv := append(append([]string{}, command...), args...)
		if argv[0] == "podgate" && im.Self != "" {
			argv[0] = im.Self
		}
		return argv, nil
	}
	if im.Store != nil {
		ep, cmd, found, err := im.Store.Entrypoint(image)
		if err != nil {
			return nil, field.Invalid(path.Child("image"), image, err.Error())
		}
		if found {
			// As Kubernetes runs an image: args, when given, replace its CMD.
			if len(args) == 0 {
				args = cmd
			}
			return append(append([]string{}, ep...), args...), nil
		}
	}
	ep, ok := im.entrypoint(image)
	if !ok {
		return nil, field.Required(path.Child("command"), fmt.Sprintf(
			"image %q has no local entrypoint: podgate runs containers as local processes, so give the container a command, or map the image with --image %s=/path/to/program",
			image, imageRepository(image)))
	}
	return append(append([]string{}, ep...), args...), nil
}

// LocalWarnings names the containers of w that Kubernetes would run but
// podgate cannot run here as written: no command, and an image im has no
// entrypoint for. 'podgate validate' prints them as warnings; 'podgate
// run' refuses such a workload (Check), naming the same field.
func LocalWarnings(w *podspec.Workload, im Images) []string {
	var out []string
	spec := w.PodSpec()
	check := func(c *corev1.Container, path *field.Path) {
		if _, err := im.argv(c.Image, c.Command, c.Args, path); err != nil {
			out = append(out, fmt.Sprintf("%s: image %q has no local entrypoint: Kubernetes runs the image, but 'podgate run' runs containers as local processes and needs a command, or --image %s=/path/to/program",
				err.Field, c.Image, imageRepository(c.Image)))
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], w.SpecPath().Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], w.SpecPath().Child("containers").Index(i))
	}
	return out
}

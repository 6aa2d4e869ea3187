package images

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/probe"
)

// TestappImage is the test app's image; podgate runs it as its own
// `test/testapp` subcommand.
const TestappImage = "ghcr.io/podgate/testapp"

// Map resolves container images to local entrypoints.
type Map struct {
	// Entrypoints maps an image (as written, or without its tag or digest)
	// to the argv that stands for its ENTRYPOINT.
	Entrypoints map[string][]string
	// Self, when set, is the program a command "podgate" runs (podgate's
	// images put /podgate on their PATH, and gates injected by older
	// podgates say `command: [podgate]`), which locally is this binary
	// wherever it lives.
	Self string
	// Store, when set, holds images on this machine (podgate's
	// --image-layout): a container without a command whose image it holds
	// runs the image's entrypoint from there, before Entrypoints is asked
	// (a container with a command runs it on this host, Store or not).
	Store Store
}

// Store holds images on this machine and hands out what a container of
// one runs (ociimage.Layout: an OCI image layout, the image's program
// extracted from its checked layer).
type Store interface {
	// Entrypoint returns image's ENTRYPOINT and CMD, their program a path
	// on this machine, and program, where that program is in the image
	// (an exec probe or hook in a container of the image names it so);
	// found is false, with no error, for an image the store does not
	// hold. An error means it holds the image but cannot run it (a blob
	// that fails its digest, another platform).
	Entrypoint(image string) (entrypoint, cmd []string, program string, found bool, err error)
}

// UserStore is a Store that also says which user an image runs as
// (ociimage.Layout: its config's User).
type UserStore interface {
	User(image string) (user string, found bool, err error)
}

// User is the user image runs as, as its config says it (UID[:GID], a
// name, or "" for root), and known false for an image whose config the
// node has not got: its program is a program of this machine and runs as
// the node does. The Store's images are known (when it says users), and
// podgate's own (the gate's, podgate's, the test app's: ociimage.User),
// which the node runs from this binary.
func (m Map) User(image string) (user string, known bool) {
	if s, ok := m.Store.(UserStore); ok {
		if u, found, err := s.User(image); err == nil && found {
			return u, true
		}
	}
	switch Repository(image) {
	case contract.GateImage, contract.PodgateImage, TestappImage:
		return ociimage.User, true
	}
	return "", false
}

// Default maps the test app's image to this binary's `test/testapp`
// subcommand, the gate's image and podgate's (whose `gate` both run the
// gate), and the command "podgate", to this binary: `podgate run` runs
// its gates without flags or images.
func Default() (Map, error) {
	exe, err := os.Executable()
	if err != nil {
		return Map{}, fmt.Errorf("find own executable for %s: %w", TestappImage, err)
	}
	return Map{
		Entrypoints: map[string][]string{
			TestappImage:          {exe, "testapp"},
			contract.GateImage:    {exe},
			contract.PodgateImage: {exe},
		},
		Self: exe,
	}, nil
}

// OrDefault is m, or Default when m maps no image (Entrypoints nil: no
// --image given), with m's Store kept: the test app and the gate run
// without flags.
func (m Map) OrDefault() (Map, error) {
	if m.Entrypoints != nil {
		return m, nil
	}
	d, err := Default()
	if err != nil {
		return m, err
	}
	d.Store = m.Store
	return d, nil
}

// CheckFlags checks that every --image flag is written NAME=PATH (whether
// PATH runs is FromFlags's question, later), so commands can refuse a
// misspelt flag as a usage error before anything starts.
func CheckFlags(flags []string) error {
	for _, f := range flags {
		if name, path, ok := strings.Cut(f, "="); !ok || name == "" || path == "" {
			return fmt.Errorf("--image %q: want NAME=PATH, e.g. --image ghcr.io/acme/api=./bin/api", f)
		}
	}
	return nil
}

// FromFlags is Default plus --image NAME=PATH mappings (their syntax
// checked with the other flags): PATH, made absolute, must be an
// executable file.
func FromFlags(flags []string) (Map, error) {
	m, err := Default()
	if err != nil {
		return m, err
	}
	for _, f := range flags {
		name, path, _ := strings.Cut(f, "=")
		abs, err := filepath.Abs(path)
		if err != nil {
			return m, fmt.Errorf("--image %s: %w", f, err)
		}
		if st, err := os.Stat(abs); err != nil {
			return m, fmt.Errorf("--image %s: %w", f, err)
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			return m, fmt.Errorf("--image %s: %s is not an executable file", f, abs)
		}
		m.Set(name, abs)
	}
	return m, nil
}

// Set adds an --image NAME=PATH mapping.
func (m *Map) Set(image string, entrypoint ...string) {
	if m.Entrypoints == nil {
		m.Entrypoints = map[string][]string{}
	}
	m.Entrypoints[image] = entrypoint
}

// entrypoint finds image's entrypoint: the exact name first, then the name
// without a digest or tag (ghcr.io/podgate/testapp:latest is the test app).
func (m Map) entrypoint(image string) ([]string, bool) {
	if ep, ok := m.Entrypoints[image]; ok {
		return ep, true
	}
	if ep, ok := m.Entrypoints[Repository(image)]; ok {
		return ep, true
	}
	return nil, false
}

// Repository is image without its digest (@sha256:…) and tag (:v1; a
// colon after the last slash, so a registry port stays): what --image maps.
func Repository(image string) string {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		image = image[:i]
	}
	return image
}

// Present reports whether the node has what a container of image with
// command runs: a container with a command runs it on this machine,
// whatever its image; one without needs the image's entrypoint, from the
// Store (one it holds but cannot run is present: Argv says why it does
// not start) or mapped. A container whose image is not present waits as
// a kubelet's does for an image it cannot pull (package node/imagepull).
func (m Map) Present(image string, command []string) bool {
	if len(command) > 0 {
		return true
	}
	if m.Store != nil {
		if _, _, _, found, err := m.Store.Entrypoint(image); found || err != nil {
			return true
		}
	}
	_, ok := m.entrypoint(image)
	return ok
}

// PullError is why a pull of image, which is not Present, fails: podgate's
// node has no registry to pull from, and says how to give it the image.
func PullError(image string) string {
	return fmt.Sprintf("podgate's node does not pull images: it runs containers as local processes, and image %q has no local entrypoint: give the container a command, or start the node with --image %s=/path/to/program (podgate cluster up, podgate node, podgate run) or with the image in its --image-layout (podgate node, podgate run)",
		image, Repository(image))
}

// Argv is the container's command line before $(VAR) expansion, as a
// container runtime builds it: command replaces the image's entrypoint;
// args replace its default arguments (an image of the Store has its CMD;
// one mapped in Entrypoints has none). An image without a local
// entrypoint and no command is an error at path.command; an image the
// Store holds but cannot run, at path.image.
func (m Map) Argv(image string, command, args []string, path *field.Path) ([]string, *field.Error) {
	if len(command) > 0 {
		argv := append(append([]string{}, command...), args...)
		if argv[0] == "podgate" && m.Self != "" {
			argv[0] = m.Self
		}
		return argv, nil
	}
	if m.Store != nil {
		ep, cmd, _, found, err := m.Store.Entrypoint(image)
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
	ep, ok := m.entrypoint(image)
	if !ok {
		return nil, field.Required(path.Child("command"), fmt.Sprintf(
			"image %q has no local entrypoint: podgate runs containers as local processes, so give the container a command, or map the image with --image %s=/path/to/program",
			image, Repository(image)))
	}
	return append(append([]string{}, ep...), args...), nil
}

// LookPath finds argv[0] as a container runtime would: a name with a
// slash is a path (relative to the working directory dir), a bare name is
// looked up in the container's own PATH (pathEnv), never podgate's.
func LookPath(name, dir, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &exec.Error{Name: name, Err: err}
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// Executor runs the exec probes and hooks of a container of image on
// this host as h says (its working directory, environment and network).
// A container runtime runs them in the container's filesystem, the
// image's; here the one file of an image podgate knows is its program,
// so a command naming the image's program by its path in the image runs
// the program that stands for it on this machine — the gate's startup
// probe is `/podgate gate wait` — and a command "podgate" runs Self, as a
// container's command does.
func (m Map) Executor(image string, h probe.HostExecutor) probe.Executor {
	e := hostExecutor{HostExecutor: h, self: m.Self}
	e.inImage, e.program = m.program(image)
	return e
}

// program is image's program: its path in the image and the program on
// this machine that runs for it ("" for an image whose program is not
// known). The Store says for its images; podgate's own images (the
// gate's and podgate's), mapped in Entrypoints, hold theirs at
// contract.ImageBinary.
func (m Map) program(image string) (inImage, local string) {
	if m.Store != nil {
		ep, cmd, prog, found, err := m.Store.Entrypoint(image)
		if err != nil {
			return "", "" // the container cannot start: Argv says why
		}
		if found {
			if len(ep) == 0 {
				ep = cmd
			}
			if len(ep) == 0 || prog == "" {
				return "", ""
			}
			return prog, ep[0]
		}
	}
	if r := Repository(image); r != contract.GateImage && r != contract.PodgateImage {
		return "", ""
	}
	if ep, ok := m.entrypoint(image); ok && len(ep) > 0 {
		return contract.ImageBinary, ep[0]
	}
	return "", ""
}

type hostExecutor struct {
	probe.HostExecutor
	self             string
	inImage, program string
}

func (e hostExecutor) Exec(ctx context.Context, argv []string) ([]byte, int, error) {
	return e.HostExecutor.Exec(ctx, e.argv(argv))
}

// argv is argv as it runs on this machine (see Executor).
func (e hostExecutor) argv(argv []string) []string {
	if len(argv) > 0 {
		switch {
		case argv[0] == "podgate" && e.self != "":
			argv = append([]string{e.self}, argv[1:]...)
		case e.inImage != "" && filepath.Clean(argv[0]) == e.inImage:
			argv = append([]string{e.program}, argv[1:]...)
		}
	}
	return argv
}

// Command is argv, a command run in a container of image (kubectl exec),
// as it runs on this machine: as Executor maps an exec probe's.
func (m Map) Command(image string, argv []string) []string {
	e := hostExecutor{self: m.Self}
	e.inImage, e.program = m.program(image)
	return e.argv(argv)
}

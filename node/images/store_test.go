package images

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gate/contract"
)

// storeImage is one image of a mapStore: what it runs (program: its
// path in the image), or why it cannot.
type storeImage struct {
	entrypoint, cmd []string
	program         string
	err             error
}

// mapStore is a Store holding its images in a map (ociimage.Layout
// is the one on disk).
type mapStore map[string]storeImage

func (s mapStore) Entrypoint(image string) ([]string, []string, string, bool, error) {
	im, ok := s[image]
	if !ok {
		return nil, nil, "", false, nil
	}
	return im.entrypoint, im.cmd, im.program, im.err == nil, im.err
}

func TestImagesOfTheStoreRunAsKubernetesRunsAnImage(t *testing.T) {
	t.Parallel()
	im := Map{Self: "/opt/podgate", Store: mapStore{
		"example.test/app:v1":   {entrypoint: []string{"/cache/app", "--base"}, cmd: []string{"serve", "--port=8080"}},
		"example.test/cmd:v1":   {cmd: []string{"/cache/cmd", "run"}},
		"example.test/tampered": {err: errors.New(`image "example.test/tampered" in OCI layout /l: digest mismatch`)},
	}}
	im.Set("example.test/mapped", "/bin/mapped")
	path := field.NewPath("spec", "containers").Index(0)
	for _, tc := range []struct {
		name          string
		image         string
		command, args []string
		want, wantErr string
	}{
		{"no command, no args: the image's entrypoint and cmd", "example.test/app:v1", nil, nil, "/cache/app --base serve --port=8080", ""},
		{"args replace the image's cmd", "example.test/app:v1", nil, []string{"other"}, "/cache/app --base other", ""},
		{"an image with only a cmd runs it", "example.test/cmd:v1", nil, nil, "/cache/cmd run", ""},
		{"a command runs on this host, as without a store", "example.test/app:v1", []string{"podgate", "gate"}, nil, "/opt/podgate gate", ""},
		{"an image the store lacks falls back to the mapped entrypoints", "example.test/mapped:v3", nil, []string{"x"}, "/bin/mapped x", ""},
		{"an image the store cannot run is an error at the image field", "example.test/tampered", nil, nil, "",
			`spec.containers[0].image: Invalid value: "example.test/tampered": image "example.test/tampered" in OCI layout /l: digest mismatch`},
		{"an image neither knows keeps today's error", "nginx", nil, nil, "", `spec.containers[0].command: Required value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := im.Argv(tc.image, tc.command, tc.args, path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(argv, " ") != tc.want {
				t.Errorf("argv = %q, %v; want %q", argv, err, tc.want)
			}
		})
	}
}

func TestOrDefaultRunsTheTestAppAndGateWithoutFlagsKeepingTheStore(t *testing.T) {
	t.Parallel()
	store := mapStore{"example.com/app:1": {entrypoint: []string{"/app"}}}
	for _, tc := range []struct {
		name       string
		in         Map
		wantImages []string // mapped after OrDefault
		wantStore  bool
	}{
		{"no --image: the test app and the gate", Map{}, []string{TestappImage, contract.GateImage, contract.PodgateImage}, false},
		{"no --image, a store: the defaults and the store", Map{Store: store}, []string{TestappImage, contract.GateImage}, true},
		{"--image given: as it is", Map{Entrypoints: map[string][]string{"x": {"/x"}}, Store: store}, []string{"x"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.OrDefault()
			if err != nil {
				t.Fatal(err)
			}
			for _, image := range tc.wantImages {
				if _, ok := got.Entrypoints[image]; !ok {
					t.Errorf("image %s not mapped: %v", image, got.Entrypoints)
				}
			}
			if tc.in.Entrypoints != nil && len(got.Entrypoints) != len(tc.in.Entrypoints) {
				t.Errorf("entrypoints %v, want the given ones only", got.Entrypoints)
			}
			if (got.Store != nil) != tc.wantStore {
				t.Errorf("store kept: %v, want %v", got.Store != nil, tc.wantStore)
			}
		})
	}
}

package deploy

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// podgateImage is a reference to podgate's image or the gate's, with
// whatever follows the name (a tag, a digest).
var podgateImage = regexp.MustCompile(`ghcr\.io/podgate/podgate(-gate)?([:@][^\s"']*)?`)

// TestManifestsNameTheReleaseImages reads every manifest of kube/deploy (the
// files users apply, knative's too, not only the embedded base): none
// names an image :latest, and every image of podgate's they name is
// Version's tag, so what a user applies is pinned (an untagged image is
// :latest too).
func TestManifestsNameTheReleaseImages(t *testing.T) {
	t.Parallel()
	var files, refs int
	err := fs.WalkDir(os.DirFS("."), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, ":latest") {
				t.Errorf("%s:%d: %q names :latest", path, i+1, strings.TrimSpace(line))
			}
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue // comments name images by repository
			}
			for _, m := range podgateImage.FindAllStringSubmatch(line, -1) {
				refs++
				if tag, _, _ := strings.Cut(m[2], "@"); tag != ":"+Version {
					t.Errorf("%s:%d: %s, want tag %s (Version)", path, i+1, m[0], Version)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The base's Deployments and DaemonSet, the webhook's --gate-image,
	// Knative's queue-sidecar-image.
	if files < 10 || refs != 5 {
		t.Errorf("%d manifests naming podgate's images %d times, want the 5 references of the base and knative", files, refs)
	}
}

func TestTheRegexpFindsWhatTheTestRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, want string
	}{
		{"        image: ghcr.io/podgate/podgate:v0.3.0", ":v0.3.0"},
		{"  queue-sidecar-image: ghcr.io/podgate/podgate-gate", ""},
		{"        - --gate-image=ghcr.io/podgate/podgate-gate:v1@sha256:ab", ":v1@sha256:ab"},
		{`        image: "ghcr.io/podgate/podgate@sha256:ab"`, "@sha256:ab"},
	} {
		m := podgateImage.FindStringSubmatch(tc.line)
		if m == nil || m[2] != tc.want {
			t.Errorf("%q: matched %q, want the part after the name %q", tc.line, m, tc.want)
		}
	}
}

package node

import (
	"testing"

	"github.com/podgate/podgate/node/images"
)

// storedImages is an images.Store holding one image, a shell command.
type storedImages map[string][]string

func (s storedImages) Entrypoint(image string) ([]string, []string, string, bool, error) {
	ep, ok := s[image]
	return ep, nil, "/bin/sh", ok, nil
}

func TestAnAgentRunsImagesOfItsStore(t *testing.T) {
	t.Parallel()
	// Only a Store: the agent adds the default entrypoints and keeps it.
	h := newHarness(t, func(o *Options) {
		o.Images = images.Map{Store: storedImages{
			"example.test/sh:v1": {"/bin/sh", "-c", "echo from the store; exec sleep 600"},
		}}
	})
	h.start(`
apiVersion: v1
kind: Pod
metadata: {name: stored}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: example.test/sh:v1
`)
	h.waitOutputCount("stored", "from the store", 1)
}

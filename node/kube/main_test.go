package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

// nodeHelperEnv makes the test binary a `podgate node` of its own (for the
// test that SIGKILLs a node): its value is a helperConfig in JSON.
const nodeHelperEnv = "PODGATE_KUBENODE_TEST_NODE"

type helperConfig struct {
	Kubeconfig, NodeName, PodCIDR string
	// PodsDir is the test's: a SIGKILLed node leaves its pods' files.
	PodsDir string
}

// The test binary doubles as the containers' program: the default image
// resolution runs os.Executable() with "testapp", as podgate runs its own
// subcommand.
func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(testapp.Main(os.Args[2:]))
	}
	if v := os.Getenv(nodeHelperEnv); v != "" {
		os.Exit(runNodeHelper(v))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(leftovers.Isolate()))
}

// runNodeHelper runs a node until it is killed, printing "ready" once it
// runs its pods.
func runNodeHelper(v string) int {
	var hc helperConfig
	if err := json.Unmarshal([]byte(v), &hc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err := Run(context.Background(), Config{
		Kubeconfig: hc.Kubeconfig, NodeName: hc.NodeName, PodCIDR: hc.PodCIDR, PodsDir: hc.PodsDir,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Ready:  func() { fmt.Println("ready") },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

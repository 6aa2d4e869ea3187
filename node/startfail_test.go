package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/events"
)

func TestAMissingProgramFailsToStartWithTheRuntimesMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, command, want string }{
		{"a program not on PATH", "podgate-no-such-program", `exec: "podgate-no-such-program": executable file not found in $PATH`},
		{"a path that does not exist", "/podgate/no/such/program", `exec: "/podgate/no/such/program": stat /podgate/no/such/program: no such file or directory`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.start(podYAML("missing", `  containers:
  - name: app
    image: busybox
    command: ["`+c.command+`"]
`))
			h.waitEvent("missing", events.ReasonFailed, "Error: "+c.want)
			h.waitPod("missing", "a StartError with the message", func(p *corev1.Pod) bool {
				st := containerStatus(p, "app")
				lt := st.LastTerminationState.Terminated
				if lt == nil {
					lt = st.State.Terminated
				}
				return lt != nil && lt.Reason == "StartError" && lt.Message == c.want
			})
		})
	}
}

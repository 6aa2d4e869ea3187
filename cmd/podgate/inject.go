package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
)

func init() { register(newInjectCmd) }

func newInjectCmd() *cobra.Command {
	var mf manifestFlags
	var opts inject.Options
	cmd := &cobra.Command{
		Use:   "inject -f FILE|DIR|-...",
		Short: "Print manifests with the gate injected, as podgate runs them",
		Long: `Print the manifests with the gate sidecar injected: readiness probes moved
into the gate, liveness and startup probes routed through it, a drain hook on
every container, $PORT on the serving container. Other objects (ConfigMaps,
Kubernetes Services, ...) pass through unchanged. Invalid manifests are
reported as by 'podgate validate' and nothing is printed.

Without --local the output is what the Kubernetes webhook would admit: the
gate reaches the other containers at 127.0.0.1 and reads container status
from podgate's node status service on its node (http://$(PODGATE_HOST_IP):9026),
and its namespace from its pod, so the output can be applied to any namespace
(kubectl apply -n shop -f -). With --local it is what 'podgate run' runs.

The gate is a native sidecar (the first init container, restartPolicy
Always; Kubernetes 1.29 or later): the other containers start once it
serves, and it stops after them. --gate-as-container makes it the first
regular container instead, for older clusters: the other containers may
then start before it listens, and it stops at the same time as they do.

-f takes a file, a directory (its *.yaml, *.yml and *.json files; -R for
subdirectories too) or - for standard input, as kubectl does.

Exit status: 0 ok, 1 invalid input, 2 usage error.`,
		// Extra arguments are more files, so `-f examples/*.yaml` works as
		// the shell expands it.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.GateImage == "" {
				return usageErrorf("--gate-image must not be empty")
			}
			if _, err := loopback.Check(opts.APIAddr); err != nil {
				return usageErrorf("--api %q: %v", opts.APIAddr, err)
			}
			inputs, err := mf.inputs(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			m, problems, err := validation.LoadInputs(inputs...)
			if err != nil {
				return invalidf("%v", err)
			}
			if len(problems) > 0 {
				for _, p := range problems {
					fmt.Fprintln(cmd.ErrOrStderr(), p.Error())
				}
				return withCode(exitInvalid)
			}
			// The output may be applied to any namespace (kubectl apply
			// -n), so on a cluster the gate reads its pod's own.
			opts.NamespaceFromPod = !opts.Local
			items, err := inject.Manifests(m, opts)
			if err != nil {
				return invalidf("%v", err)
			}
			// Render everything before printing, so a failure prints nothing.
			var b bytes.Buffer
			if err := workload.WriteItems(&b, items); err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b.Bytes())
			return err
		},
	}
	mf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&opts.Local, "local", false, "inject for 'podgate run' (own loopback address per pod, node agent status)")
	cmd.Flags().StringVar(&opts.GateImage, "gate-image", contract.DefaultImage, "image of the gate container")
	cmd.Flags().StringVar(&opts.APIAddr, "api", contract.APIAddr, "with --local: address of the node agent's control API")
	cmd.Flags().StringVar(&opts.AdminToken, "admin-token", "", "the pods' admin token (PODGATE_ADMIN_TOKEN, sent by the preStop hooks); default: a fresh random one")
	cmd.Flags().BoolVar(&opts.GateAsContainer, "gate-as-container", false, "make the gate a regular container, not a native sidecar (clusters before Kubernetes 1.29)")
	return cmd
}

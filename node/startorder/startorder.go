package startorder

// Container is what the start order knows of one of the pod's containers.
type Container struct {
	// Init: in spec.initContainers.
	Init bool
	// Sidecar: a native sidecar (an init container with restartPolicy
	// Always).
	Sidecar bool
	// Running: an instance of it runs.
	Running bool
	// Started: its startup probe passed, or it runs and has none.
	Started bool
	// Succeeded: a regular init container that exited 0.
	Succeeded bool
	// Done: it will not be started again.
	Done bool
}

// Step is what the pod worker does next.
type Step struct {
	// Start lists the containers to start now (indices into the
	// containers given to Next), unless the worker holds one back (its
	// crash-loop back-off, an environment it could not resolve): the main
	// containers in order, then the native sidecars in order.
	Start []int
	// Initialized: every init container is done (each regular one
	// succeeded, each native sidecar Started): the pod is Initialized and
	// its main containers run.
	Initialized bool
	// InitFailed: a regular init container failed and will not run again:
	// the pod has failed; nothing more starts.
	InitFailed bool
}

// Next is the next step for the containers cs, given in the pod spec's
// order (init containers, then containers). initialized is what the
// previous step reported: once the pod is Initialized it stays so, and
// the init containers are not looked at again (a native sidecar that
// stopped is restarted, the others keep running).
func Next(cs []Container, initialized bool) Step {
	if !initialized {
		for i, c := range cs {
			if !c.Init {
				break
			}
			switch {
			case c.Sidecar && c.Running:
				if !c.Started {
					return Step{} // the next one waits for its startup
				}
			case c.Succeeded:
			case c.Running:
				return Step{} // a regular one runs to its end first
			case c.Done:
				return Step{InitFailed: true}
			default:
				return Step{Start: []int{i}}
			}
		}
	}
	step := Step{Initialized: true}
	for i, c := range cs {
		if !c.Init && !c.Running && !c.Done {
			step.Start = append(step.Start, i)
		}
	}
	for i, c := range cs {
		if c.Sidecar && !c.Running && !c.Done {
			step.Start = append(step.Start, i)
		}
	}
	return step
}

// Complete reports whether the pod is complete: it has main containers
// and every one of them finished for good (restartPolicy Never, or
// OnFailure after a success). Its native sidecars are then stopped.
func Complete(cs []Container) bool {
	mains := 0
	for _, c := range cs {
		if c.Init {
			continue
		}
		mains++
		if c.Running || !c.Done {
			return false
		}
	}
	return mains > 0
}

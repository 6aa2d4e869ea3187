package startorder

import (
	"slices"
	"testing"
)

var (
	initNew        = Container{Init: true}
	initRunning    = Container{Init: true, Running: true}
	initSucceeded  = Container{Init: true, Succeeded: true, Done: true}
	initFailed     = Container{Init: true, Done: true}
	initBackingOff = Container{Init: true} // failed, will run again: the worker holds it back

	sidecarNew      = Container{Init: true, Sidecar: true}
	sidecarStarting = Container{Init: true, Sidecar: true, Running: true}
	sidecarStarted  = Container{Init: true, Sidecar: true, Running: true, Started: true}

	mainNew     = Container{}
	mainRunning = Container{Running: true, Started: true}
	mainDone    = Container{Done: true}
)

func TestNextStartsInitContainersOneAtATimeThenEveryMainContainer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		cs          []Container
		initialized bool
		want        Step
	}{
		{"the first init container starts alone",
			[]Container{initNew, initNew, mainNew}, false, Step{Start: []int{0}}},
		{"the next waits while a regular init container runs",
			[]Container{initRunning, initNew, mainNew}, false, Step{}},
		{"after a success the next one starts",
			[]Container{initSucceeded, initNew, mainNew}, false, Step{Start: []int{1}}},
		{"a regular init container that will run again is started again (the worker applies its back-off)",
			[]Container{initSucceeded, initBackingOff, mainNew}, false, Step{Start: []int{1}}},
		{"a regular init container that failed for good fails the pod",
			[]Container{initSucceeded, initFailed, initNew, mainNew}, false, Step{InitFailed: true}},
		{"a native sidecar starts in its turn",
			[]Container{initSucceeded, sidecarNew, initNew, mainNew}, false, Step{Start: []int{1}}},
		{"the next waits until the sidecar is Started",
			[]Container{sidecarStarting, initNew, mainNew}, false, Step{}},
		{"a Started sidecar lets the next one start",
			[]Container{sidecarStarted, initNew, mainNew}, false, Step{Start: []int{1}}},
		{"when every init container is done, every main container starts",
			[]Container{initSucceeded, sidecarStarted, mainNew, mainNew}, false, Step{Initialized: true, Start: []int{2, 3}}},
		{"a pod without init containers is initialized at once",
			[]Container{mainNew, mainNew}, false, Step{Initialized: true, Start: []int{0, 1}}},
		{"once initialized, a stopped sidecar restarts after the main containers",
			[]Container{sidecarNew, initSucceeded, mainNew, mainRunning, mainDone}, true, Step{Initialized: true, Start: []int{2, 0}}},
		{"once initialized, a sidecar not yet Started holds nothing back",
			[]Container{sidecarStarting, mainNew}, true, Step{Initialized: true, Start: []int{1}}},
		{"once initialized, nothing to start",
			[]Container{sidecarStarted, mainRunning, mainDone}, true, Step{Initialized: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.cs, tc.initialized)
			if !slices.Equal(got.Start, tc.want.Start) || got.Initialized != tc.want.Initialized || got.InitFailed != tc.want.InitFailed {
				t.Fatalf("Next = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCompleteOnceEveryMainContainerFinishedForGood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cs   []Container
		want bool
	}{
		{"every main container done", []Container{sidecarStarted, mainDone, mainDone}, true},
		{"one still running", []Container{mainDone, mainRunning}, false},
		{"one not started yet", []Container{mainDone, mainNew}, false},
		{"running sidecars do not keep the pod from completing", []Container{sidecarStarted, mainDone}, true},
		{"no main containers is never complete", []Container{initSucceeded}, false},
		{"no containers at all", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Complete(tc.cs); got != tc.want {
				t.Fatalf("Complete = %v, want %v", got, tc.want)
			}
		})
	}
}

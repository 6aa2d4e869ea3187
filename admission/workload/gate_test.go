package workload

import (
	"strings"
	"testing"
)

func TestUserContainerNamedPodgateIsNotTakenForTheGate(t *testing.T) {
	w := one(t, strings.Replace(podWith(""), "name: app", "name: podgate", 1))
	if w.IsInjected() {
		t.Fatal("a user container named podgate made the pod look injected")
	}
}

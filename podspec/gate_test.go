package podspec

import (
	"strings"
	"testing"
)

func TestUserContainerNamedPodgateIsNotTakenForTheGate(t *testing.T) {
	w := one(t, strings.Replace(podWith(""), "name: app", "name: podgate", 1))
	if w.IsInjected() {
		t.Fatal("a user container named podgate made the pod look injected")
	}
	if _, err := Inject(w, Options{}); err == nil || !strings.Contains(err.Error(), "podgate") {
		t.Fatalf("Inject of a pod with a user container named podgate: err %v, want a name clash", err)
	}
}

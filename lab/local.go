package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate/contract"
)

// Local is a scenario's World under `podgate run`: the Process started
// with its manifests, in namespace default.
type Local struct{ *Process }

var _ World = Local{}

// ListPods, ListEvents and DeletePod go to the control API.
func (l Local) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return l.client.CoreV1().Pods("").List(ctx, opts)
}

func (l Local) ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	return l.client.CoreV1().Events("").List(ctx, opts)
}

func (l Local) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return l.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
}

// Namespace is podgate run's default.
func (l Local) Namespace() string { return "default" }

// Host is NAME.default.example.com, podgate run's default domain.
func (l Local) Host(service string) string {
	return service + "." + l.Namespace() + "." + contract.Domain
}

// PodHTTP reaches the pods on loopback.
func (l Local) PodHTTP() *PodHTTP { return Loopback }

// WaitService waits for the Knative Service's Ready condition.
func (l Local) WaitService(ctx context.Context, service string, state ServiceState) error {
	want := map[ServiceState]ServiceCondition{
		Serving:     ServiceReady(corev1.ConditionTrue, ""),
		NotServing:  ServiceReady(corev1.ConditionUnknown, "NoHealthyBackends"),
		NeverServed: ServiceReady(corev1.ConditionUnknown, "RevisionMissing"),
	}[state]
	_, err := WaitServiceCondition(ctx, l.client, l.Namespace(), service, want)
	return err
}

// StatusMessage is the Knative Service's Ready condition's message.
func (l Local) StatusMessage(ctx context.Context, service string) (string, error) {
	s, err := GetService(ctx, l.client, l.Namespace(), service)
	if err != nil {
		return "", err
	}
	if c := s.Status.Condition("Ready"); c != nil {
		return c.Message, nil
	}
	return "", errors.New("no Ready condition")
}

// TimesOutHeldRequests: the front door holds a request for its
// revision's timeoutSeconds.
func (l Local) TimesOutHeldRequests() bool { return true }

// Output is podgate's standard output.
func (l Local) Output() string { return l.Stdout() }

// Logs is podgate's stderr and the end of its stdout.
func (l Local) Logs() string {
	out := l.Stdout()
	if len(out) > 64<<10 {
		out = "[…]" + out[len(out)-64<<10:]
	}
	return fmt.Sprintf("podgate stderr:\n%s\npodgate stdout (containers):\n%s", l.Stderr(), out)
}

// Stop stops podgate with SIGTERM: it must exit 0, its front door having
// shut down cleanly.
func (l Local) Stop(timeout time.Duration) error {
	code, err := l.Process.Stop(timeout)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("podgate exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(l.Stderr(), "podgate: front door:") {
		return errors.New("the front door did not shut down cleanly")
	}
	return nil
}

// StartLocal starts `podgate run` (Start) and waits until its front door
// routes service; on error nothing of it is left.
func StartLocal(ctx context.Context, cfg Config, service string) (Local, error) {
	p, err := Start(ctx, cfg)
	if err != nil {
		return Local{}, err
	}
	w := Local{Process: p}
	if err := p.WaitRoute(ctx, w.Host(service)); err != nil {
		_ = w.Stop(10 * time.Second)
		return Local{}, err
	}
	return w, nil
}

package lab

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/podctl"
	"github.com/podgate/podgate/local/servingv1"
)

// ServiceCondition is what a Knative Service condition should say;
// an empty Reason matches any.
type ServiceCondition struct {
	Type   string
	Status corev1.ConditionStatus
	Reason string
}

func (w ServiceCondition) String() string {
	s := w.Type + "=" + string(w.Status)
	if w.Reason != "" {
		s += " (" + w.Reason + ")"
	}
	return s
}

// Matches reports whether the service's condition is as wanted, or why not.
func (w ServiceCondition) Matches(s *servingv1.Service) error {
	c := s.Status.Condition(w.Type)
	if c == nil {
		return fmt.Errorf("no %s condition", w.Type)
	}
	if c.Status != w.Status || (w.Reason != "" && c.Reason != w.Reason) {
		return fmt.Errorf("%s=%s reason %q message %q", c.Type, c.Status, c.Reason, c.Message)
	}
	return nil
}

// WaitServiceCondition waits until the Knative Service namespace/name
// reports every wanted condition at once, and returns it.
func WaitServiceCondition(ctx context.Context, c *podctl.Client, namespace, name string, want ...ServiceCondition) (*servingv1.Service, error) {
	var found *servingv1.Service
	var what []string
	for _, w := range want {
		what = append(what, w.String())
	}
	err := Poll(ctx, PollInterval, fmt.Sprintf("service %s/%s %s", namespace, name, strings.Join(what, ", ")),
		func(ctx context.Context) (bool, error) {
			s, err := GetService(ctx, c, namespace, name)
			if err != nil {
				return false, err
			}
			for _, w := range want {
				if err := w.Matches(s); err != nil {
					return false, err
				}
			}
			found = s
			return true, nil
		})
	return found, err
}

// GetService reads one Knative Service.
func GetService(ctx context.Context, c *podctl.Client, namespace, name string) (*servingv1.Service, error) {
	s, err := c.Serving.Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no Knative Service %s/%s", namespace, name)
	}
	return s, err
}

// ServiceReady is the Ready condition with status and (if not empty) reason.
func ServiceReady(status corev1.ConditionStatus, reason string) ServiceCondition {
	return ServiceCondition{Type: "Ready", Status: status, Reason: reason}
}

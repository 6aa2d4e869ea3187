package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// knativeWait bounds the Knative install and a Knative Service's first
// Ready: minutes on a loaded 2-core machine (kube/cluster's tests allow
// as much).
const knativeWait = 10 * time.Minute

var ksvcResource = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

// measureKnative waits for cluster up's Knative ingress, then creates the
// Knative Service hello in namespace default and measures, from the
// create call, its Ready condition and the first 200 through the ingress
// (both watched at once: Traefik may route before the Service's Ready is
// seen, or after, since it marks its Ingress ready before the routes are
// loaded).
func measureKnative(ctx context.Context, u *upProcess, dir string, hello []byte, r *result) error {
	ingress, err := benchenv.WaitKnativeIngress(ctx, u.log.Name(), knativeWait, u.exited)
	if err != nil {
		return err
	}
	r.knativeReady = time.Since(u.begin)
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// Knative's webhook warns on every create that the example leaves
	// the security context at Kubernetes' defaults: not what is measured.
	rc.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal(hello, &obj.Object); err != nil {
		return fmt.Errorf("examples/hello.yaml: %w", err)
	}
	services := dyn.Resource(ksvcResource).Namespace("default")
	host := obj.GetName() + ".default.example.com"
	begin := time.Now()
	if _, err := services.Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Knative Service %s: %w", obj.GetName(), err)
	}
	var (
		wg               sync.WaitGroup
		readyErr, getErr error
	)
	wg.Go(func() {
		readyErr = benchenv.Poll(ctx, "Knative Service "+obj.GetName()+" Ready", knativeWait, u.exited, func() (bool, error) {
			s, err := services.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			status, msg := readyCondition(s)
			return status == "True", fmt.Errorf("condition Ready=%s %s", status, msg)
		})
		r.serviceReady = time.Since(begin)
	})
	wg.Go(func() {
		getErr = benchenv.Poll(ctx, "a 200 through the ingress", knativeWait, u.exited, func() (bool, error) {
			return getOK(ctx, ingress, host)
		})
		r.firstAnswer = time.Since(begin)
	})
	wg.Wait()
	return errors.Join(readyErr, getErr)
}

// readyCondition is a Knative object's Ready condition: status and message.
func readyCondition(u *unstructured.Unstructured) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "Unknown", "no Ready condition yet"
}

// ingressClient asks the ingress on a new connection each time, as a
// first client would (no proxy: the ingress is on loopback).
var ingressClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	Timeout:   30 * time.Second,
}

// getOK sends GET / with Host host to the ingress and says whether the
// test app answered it (200 and its pod's name, hello-…): not Traefik's
// 404 of a route it has not loaded yet.
func getOK(ctx context.Context, ingress, host string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ingress+"/", nil)
	if err != nil {
		return false, err
	}
	req.Host = host
	resp, err := ingressClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 512))
	if err != nil {
		return false, err
	}
	name, _, _ := strings.Cut(host, ".")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), name+"-") {
		return false, fmt.Errorf("%d %q", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return true, nil
}

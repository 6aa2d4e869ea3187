package controllers

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
)

// Labels the controllers put on pods.
const (
	// LabelPodTemplateHash is the ReplicaSet's label on its pods.
	LabelPodTemplateHash = "pod-template-hash"
)

// safeAlphabet is the API server's alphabet for generated names: no vowels,
// no look-alike digits, so names never spell words.
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// templateHash is the ReplicaSet-style hash of a pod template: FNV-32a of
// its JSON, written in safeAlphabet. The same manifest gives the same hash
// on every run, as `kubectl apply` of an unchanged Deployment does.
func templateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	data, err := json.Marshal(t)
	if err != nil {
		// A PodTemplateSpec always marshals; keep a stable fallback anyway.
		data = []byte(fmt.Sprintf("%v", t))
	}
	_, _ = h.Write(data)
	v := h.Sum32()
	var out []byte
	for v > 0 || len(out) == 0 {
		out = append(out, safeAlphabet[v%uint32(len(safeAlphabet))])
		v /= uint32(len(safeAlphabet))
	}
	// Kubernetes' hashes are up to 10 characters; trimming the short
	// ones keeps the name readable.
	if len(out) > 10 {
		out = out[:10]
	}
	return string(out)
}

// podNaming is how a workload names and labels its pods.
type podNaming struct {
	// fixedName is a Pod's own name; empty for controllers, which use
	// generateName.
	fixedName    string
	generateName string
	labels       map[string]string
	// serviceName names the workload's EndpointSlice and its
	// kubernetes.io/service-name label.
	serviceName string
}

// namingFor decides pod names as the controllers would:
//   - a Pod keeps its name;
//   - a Deployment's pods are NAME-<template hash>-<5 random> (its
//     ReplicaSet is NAME-<hash>), labelled pod-template-hash;
//   - a Knative Service's pods belong to the Deployment Knative creates for
//     revision NAME-00001, so they are NAME-00001-deployment-<hash>-<5>,
//     with Knative's labels.
func namingFor(w *workload.Workload) podNaming {
	labels := w.PodLabels()
	switch {
	case w.Kind == workload.KindPod:
		return podNaming{fixedName: w.Name, labels: labels, serviceName: w.Name}
	case w.Knative != nil:
		rev := w.Knative.RevisionName
		hash := templateHash(&w.Template)
		labels[LabelPodTemplateHash] = hash
		if _, ok := labels["app"]; !ok {
			// Knative labels a revision's pods app=<revision> unless the
			// template chose an app label itself.
			labels["app"] = rev
		}
		return podNaming{generateName: rev + "-deployment-" + hash + "-", labels: labels, serviceName: rev}
	default:
		hash := templateHash(&w.Template)
		labels[LabelPodTemplateHash] = hash
		return podNaming{generateName: w.Name + "-" + hash + "-", labels: labels, serviceName: w.Name}
	}
}

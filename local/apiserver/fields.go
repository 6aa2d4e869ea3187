package apiserver

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/podgate/podgate/local/servingv1"
)

// Selectable fields per kind: the ones the API server offers for the same
// kind (pods: its pod strategy's field set; events: the event strategy's;
// others: metadata only, as for CRDs).

var metadataFields = []string{"metadata.name", "metadata.namespace"}

var podFields = slices.Concat(metadataFields, []string{
	"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
	"spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"})

func podFieldSet(p *corev1.Pod) fields.Set {
	podIP := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	}
	return fields.Set{
		"metadata.name":            p.Name,
		"metadata.namespace":       p.Namespace,
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

var eventFields = slices.Concat(metadataFields, []string{
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
	"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
	"reason", "reportingComponent", "source", "type"})

func eventFieldSet(e *corev1.Event) fields.Set {
	return fields.Set{
		"metadata.name":                  e.Name,
		"metadata.namespace":             e.Namespace,
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func endpointSliceFieldSet(s *discoveryv1.EndpointSlice) fields.Set {
	return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace}
}

func serviceFieldSet(s *servingv1.Service) fields.Set {
	return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace}
}

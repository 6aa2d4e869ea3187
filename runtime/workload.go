package runtime

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/podspec"
)

// workload is the controller of one manifest: it keeps the replica count
// of pods, replaces a Deployment's or Service's deleted pods at once (as
// the ReplicaSet controller does, not waiting for the old one to finish),
// (the EndpointSlice follows from the pods: package localcluster).
type workload struct {
	a        *Agent
	w        *podspec.Workload
	naming   podNaming
	replicas int
	ownerUID types.UID

	mu       sync.Mutex
	pods     map[string]*pod // by name, terminating ones included
	stopping bool
}

func newWorkload(a *Agent, w *podspec.Workload) *workload {
	return &workload{
		a: a, w: w, naming: namingFor(w), replicas: a.replicasOf(w),
		ownerUID: types.UID(fmt.Sprintf("podgate-%s-%s-%s", w.Kind, w.Namespace, w.Name)),
		pods:     map[string]*pod{},
	}
}

// ownerRefs names the ReplicaSet that would own the pods.
func (wl *workload) ownerRefs() []metav1.OwnerReference {
	if wl.w.Kind == podspec.KindPod {
		return nil
	}
	yes := true
	name := wl.naming.generateName
	name = name[:len(name)-1] // NAME-<hash>, the ReplicaSet
	return []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: wl.ownerUID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}}
}

func (wl *workload) start() error {
	var firstErr error
	for range wl.replicas {
		if err := wl.createPod(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (wl *workload) createPod() error {
	p, err := newPod(wl)
	if err != nil {
		wl.a.log.Error("create pod", "workload", wl.w.ID(), "err", err)
		return err
	}
	wl.mu.Lock()
	wl.pods[p.name] = p
	wl.mu.Unlock()
	if !wl.a.addPod(p) {
		// The agent is shutting down.
		p.mgr.Stop()
		_, _ = wl.a.store.Pods.Delete(p.namespace, p.name)
		wl.a.ipam.release(p.ip)
		wl.mu.Lock()
		delete(wl.pods, p.name)
		wl.mu.Unlock()
		return nil
	}
	go p.run()
	p.post(evSync{})
	return nil
}

// stop terminates every pod, without replacements.
func (wl *workload) stop() {
	wl.mu.Lock()
	wl.stopping = true
	pods := make([]*pod, 0, len(wl.pods))
	for _, p := range wl.pods {
		pods = append(pods, p)
	}
	wl.mu.Unlock()
	for _, p := range pods {
		p.post(evStop{})
	}
}

// podTerminating is called by a pod worker when its pod starts
// terminating: a controller's pod is replaced right away.
func (wl *workload) podTerminating(p *pod) {
	wl.mu.Lock()
	replace := !wl.stopping && wl.w.Kind != podspec.KindPod
	wl.mu.Unlock()
	if replace && !wl.a.isStopping() {
		_ = wl.createPod()
	}
}

// podGone is called once a pod's worker has ended.
func (wl *workload) podGone(p *pod) {
	wl.mu.Lock()
	delete(wl.pods, p.name)
	wl.mu.Unlock()
}

// Package volumes is a pod's volumes as the kubelet sets them up, for a
// node whose containers are processes of this machine: each volume a
// directory of the pod's (or, for hostPath, the machine's path itself),
// and each container's volumeMounts the binds (node/proc's Bind, Volume
// set) its process makes in a mount namespace of its own.
//
// configMap, secret, downwardAPI and projected volumes are written in the
// kubelet's atomic-writer layout (WriteAtomic) with their items, modes
// and optional; SetUp writes them again to follow updates of their
// objects, as the kubelet's periodic sync does. emptyDir is a directory
// (medium Memory too: no tmpfs of its own), hostPath the path itself
// (DirectoryOrCreate and FileOrCreate create it). A projected volume with
// a serviceAccountToken source is set up by the node's PodSetup (the
// directory it names in Extras.Volumes); the others are refused with
// FailedMount.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/node/proc"
)

// Getter reads the objects volumes project: the API server's, on a
// cluster. A missing object is an error for which apierrors.IsNotFound
// holds.
type Getter interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// defaultMode is the files' mode when neither the item nor the volume
// sets one (the API's default, 0644).
const defaultMode fs.FileMode = 0o644

// Pod is one pod's volumes.
type Pod struct {
	pod   *corev1.Pod
	dir   string
	get   Getter
	paths map[string]string // volume name → this machine's path
	kinds map[string]kind
}

type kind int

const (
	kindWritten  kind = iota // configMap, secret, downwardAPI, projected
	kindEmptyDir             // a directory the containers write
	kindHost                 // hostPath, or a directory the node's PodSetup fills
)

// New prepares pod's volumes under dir (a directory of the pod's own,
// made here, only root may enter: the binds are made before the
// container's user is switched), get reading the objects they project.
// provided names volumes someone else fills (the service-account token
// volume, which the node's PodSetup writes): each is bound from its
// directory as it is. emptyDir volumes and hostPath's *OrCreate paths are
// made here.
func New(pod *corev1.Pod, dir string, get Getter, provided map[string]string) (*Pod, error) {
	p := &Pod{pod: pod, dir: dir, get: get, paths: map[string]string{}, kinds: map[string]kind{}}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	fsGroup := fsGroupOf(pod)
	for _, v := range pod.Spec.Volumes {
		if path, ok := provided[v.Name]; ok {
			p.paths[v.Name], p.kinds[v.Name] = path, kindHost
			continue
		}
		switch {
		case v.HostPath != nil:
			if err := hostPath(v.HostPath); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			p.paths[v.Name], p.kinds[v.Name] = v.HostPath.Path, kindHost
		case v.EmptyDir != nil:
			path := filepath.Join(dir, "empty-dir", v.Name)
			// The kubelet's emptyDir is 0777: any container user writes it.
			if err := os.MkdirAll(path, 0o777); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if err := (Ownership{GID: fsGroup}).apply(path, true); err != nil {
				return nil, fmt.Errorf("volume %q: fsGroup: %w", v.Name, err)
			}
			p.paths[v.Name], p.kinds[v.Name] = path, kindEmptyDir
		case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
			p.paths[v.Name], p.kinds[v.Name] = filepath.Join(dir, "volumes", v.Name), kindWritten
		}
	}
	return p, nil
}

// hostPath makes a *OrCreate path and checks the types the kubelet checks.
func hostPath(h *corev1.HostPathVolumeSource) error {
	t := corev1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(h.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket:
		info, err := os.Stat(h.Path)
		if err != nil {
			return fmt.Errorf("hostPath type check failed: %s is not a %s: %w", h.Path, strings.ToLower(string(t)), err)
		}
		if (t == corev1.HostPathDirectory) != info.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a %s", h.Path, strings.ToLower(string(t)))
		}
	}
	return nil
}

func fsGroupOf(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// SetUp writes every configMap, secret, downwardAPI and projected volume
// (again: what changed since is written anew, atomically). An error is
// the kubelet's FailedMount message for the first volume that failed:
// `MountVolume.SetUp failed for volume "X" : configmap "Y" not found`.
func (p *Pod) SetUp(ctx context.Context) error {
	for _, v := range p.pod.Spec.Volumes {
		if p.kinds[v.Name] != kindWritten {
			continue
		}
		payload, err := p.payload(ctx, v)
		if err == nil {
			_, err = WriteAtomic(p.paths[v.Name], payload, Ownership{GID: fsGroupOf(p.pod), ReadOnly: true})
		}
		if err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.Name, err)
		}
	}
	return nil
}

// payload is what volume v holds now.
func (p *Pod) payload(ctx context.Context, v corev1.Volume) (map[string]File, error) {
	out := map[string]File{}
	switch {
	case v.ConfigMap != nil:
		return out, p.configMap(ctx, out, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode))
	case v.Secret != nil:
		return out, p.secret(ctx, out, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode))
	case v.DownwardAPI != nil:
		return out, p.downward(out, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode))
	case v.Projected != nil:
		def := mode(v.Projected.DefaultMode)
		for _, s := range v.Projected.Sources {
			var err error
			switch {
			case s.ConfigMap != nil:
				err = p.configMap(ctx, out, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, def)
			case s.Secret != nil:
				err = p.secret(ctx, out, s.Secret.Name, s.Secret.Items, s.Secret.Optional, def)
			case s.DownwardAPI != nil:
				err = p.downward(out, s.DownwardAPI.Items, def)
			case s.ServiceAccountToken != nil:
				err = fmt.Errorf("a serviceAccountToken with audience %q is not projected by podgate's node (only the API server's own, in the service-account volume)", s.ServiceAccountToken.Audience)
			case s.ClusterTrustBundle != nil:
				err = errors.New("clusterTrustBundle sources are not projected by podgate's node")
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func mode(m *int32) fs.FileMode {
	if m == nil {
		return defaultMode
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// items is what a configMap's or secret's keys become: every key under
// its own name without items; else each item at its path, a key the
// object lacks an error unless optional.
func items(data map[string][]byte, its []corev1.KeyToPath, optional bool, def fs.FileMode, out map[string]File, missing func(string) error) error {
	if len(its) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: def}
		}
		return nil
	}
	for _, it := range its {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return missing(it.Key)
		}
		m := def
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		out[it.Path] = File{Data: v, Mode: m}
	}
	return nil
}

func (p *Pod) configMap(ctx context.Context, out map[string]File, name string, its []corev1.KeyToPath, optional *bool, def fs.FileMode) error {
	opt := optional != nil && *optional
	if p.get == nil {
		return fmt.Errorf("configmap %q: the node reads no configmaps", name)
	}
	cm, err := p.get.ConfigMap(ctx, p.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if opt {
				return nil
			}
			return fmt.Errorf("configmap %q not found", name)
		}
		return fmt.Errorf("configmap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return items(data, its, opt, def, out, func(k string) error {
		return fmt.Errorf("configmap references non-existent config key: %s", k)
	})
}

func (p *Pod) secret(ctx context.Context, out map[string]File, name string, its []corev1.KeyToPath, optional *bool, def fs.FileMode) error {
	opt := optional != nil && *optional
	if p.get == nil {
		return fmt.Errorf("secret %q: the node reads no secrets", name)
	}
	s, err := p.get.Secret(ctx, p.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if opt {
				return nil
			}
			return fmt.Errorf("secret %q not found", name)
		}
		return fmt.Errorf("secret %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return items(data, its, opt, def, out, func(k string) error {
		return fmt.Errorf("references non-existent secret key: %s", k)
	})
}

// downward writes the pod's own fields: metadata name, namespace, uid,
// labels and annotations (all, or one by key), as the kubelet formats
// them. Container resources are not known here.
func (p *Pod) downward(out map[string]File, its []corev1.DownwardAPIVolumeFile, def fs.FileMode) error {
	for _, it := range its {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI item %q: resourceFieldRef is not projected by podgate's node", it.Path)
		}
		v, err := fieldValue(p.pod, it.FieldRef.FieldPath)
		if err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		m := def
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		out[it.Path] = File{Data: []byte(v), Mode: m}
	}
	return nil
}

func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// formatMap is the kubelet's format of labels and annotations: key="value"
// lines (the value quoted as Go quotes it), sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// Mounts are the binds c's volumeMounts make, in the order a container
// runtime mounts them (shallower mount paths first). A subPath of an
// emptyDir or hostPath that does not exist is made, as the kubelet does.
func (p *Pod) Mounts(c *corev1.Container) ([]proc.Bind, error) {
	ms := slices.Clone(c.VolumeMounts)
	sort.SliceStable(ms, func(i, j int) bool {
		return strings.Count(filepath.Clean(ms[i].MountPath), "/") < strings.Count(filepath.Clean(ms[j].MountPath), "/")
	})
	var binds []proc.Bind
	for _, m := range ms {
		src, ok := p.paths[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no volume %q of a kind the node mounts", m.MountPath, m.Name)
		}
		if m.SubPathExpr != "" {
			return nil, fmt.Errorf("volumeMount %q: subPathExpr is not supported by podgate's node", m.MountPath)
		}
		if m.SubPath != "" {
			if err := validPath(filepath.Clean(m.SubPath)); err != nil {
				return nil, fmt.Errorf("volumeMount %q: subPath: %w", m.MountPath, err)
			}
			src = filepath.Join(src, m.SubPath)
			if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) && p.kinds[m.Name] != kindWritten {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, fmt.Errorf("volumeMount %q: subPath: %w", m.MountPath, err)
				}
			}
		}
		binds = append(binds, proc.Bind{Source: src, Target: filepath.Clean(m.MountPath), ReadOnly: m.ReadOnly, Volume: true})
	}
	return binds, nil
}

package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// store is the API server's objects, as a Getter.
type store struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (s store) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := s.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (s store) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if sec, ok := s.secrets[name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestSetUpWritesVolumesAsTheKubeletAndFailsWithItsMessages(t *testing.T) {
	t.Parallel()
	objs := store{
		cms:     map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		secrets: map[string]*corev1.Secret{"sec": {Data: map[string][]byte{"tls.key": []byte("k")}}},
	}
	for _, tc := range []struct {
		name    string
		vol     corev1.VolumeSource
		want    map[string]File
		wantErr string
	}{
		{"a configMap without items: every key, binary ones too, mode 0644",
			corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			map[string]File{"a": f("1", 0o644), "b": f("2", 0o644), "bin": f("\x00\x01", 0o644)}, ""},
		{"items: only those keys, at their paths, with their modes over defaultMode",
			corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o600),
				Items: []corev1.KeyToPath{{Key: "a", Path: "x/a.conf"}, {Key: "b", Path: "b", Mode: ptr.To[int32](0o444)}}}},
			map[string]File{"x/a.conf": f("1", 0o600), "b": f("2", 0o444)}, ""},
		{"a missing configMap: the kubelet's message",
			corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}},
			nil, `MountVolume.SetUp failed for volume "v" : configmap "nope" not found`},
		{"a missing optional configMap: an empty volume",
			corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}},
			map[string]File{}, ""},
		{"an item's key the configMap lacks: the kubelet's message",
			corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}},
			nil, `MountVolume.SetUp failed for volume "v" : configmap references non-existent config key: zz`},
		{"a missing secret: the kubelet's message",
			corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope"}},
			nil, `MountVolume.SetUp failed for volume "v" : secret "nope" not found`},
		{"a secret's item with its mode",
			corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec", Items: []corev1.KeyToPath{{Key: "tls.key", Path: "certs/tls.key", Mode: ptr.To[int32](0o400)}}}},
			map[string]File{"certs/tls.key": f("k", 0o400)}, ""},
		{"downwardAPI: the pod's fields, labels as the kubelet formats them",
			corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}},
			}}},
			map[string]File{"name": f("web-0", 0o644), "labels": f("app=\"web\"\ntier=\"a \\\"b\\\"\"", 0o644), "app": f("web", 0o644)}, ""},
		{"projected: every source in one volume, defaultMode for all",
			corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o640), Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}},
			map[string]File{"a": f("1", 0o640), "tls.key": f("k", 0o640), "ns": f("default", 0o640)}, ""},
		{"projected: a token of another audience is refused, not left out",
			corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "t"}},
			}}},
			nil, `MountVolume.SetUp failed for volume "v" : a serviceAccountToken with audience "vault" is not projected by podgate's node (only the API server's own, in the service-account volume)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"tier": `a "b"`, "app": "web"}},
				Spec:       corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: tc.vol}}},
			}
			dir := filepath.Join(t.TempDir(), "pod")
			p, err := New(pod, dir, objs, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = p.SetUp(context.Background())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("SetUp = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := visible(t, p.paths["v"])
			if len(got) != len(tc.want) {
				t.Errorf("files %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if g := got[k]; string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", k, g.Data, g.Mode, w.Data, w.Mode)
				}
			}
		})
	}
}

func TestMountsBindEachVolumeAtItsPathShallowFirstWithSubPathAndReadOnly(t *testing.T) {
	t.Parallel()
	host := t.TempDir()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(host, "made"), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
			{Name: "sa", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
		}},
	}
	p, err := New(pod, filepath.Join(t.TempDir(), "pod"), nil, map[string]string{"sa": "/creds/p"})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(host, "made")); err != nil || !info.IsDir() {
		t.Errorf("hostPath DirectoryOrCreate not made: %v", err)
	}
	binds, err := p.Mounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/var/lib/app/cache", SubPath: "cache"},
		{Name: "sa", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Name: "host", MountPath: "/data"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		src, dst string
		ro       bool
	}{
		{filepath.Join(host, "made"), "/data", false},
		{filepath.Join(p.paths["scratch"], "cache"), "/var/lib/app/cache", false},
		{"/creds/p", "/var/run/secrets/kubernetes.io/serviceaccount", true},
	}
	if len(binds) != len(want) {
		t.Fatalf("binds %+v, want %+v", binds, want)
	}
	for i, w := range want {
		if b := binds[i]; b.Source != w.src || b.Target != w.dst || b.ReadOnly != w.ro || !b.Volume {
			t.Errorf("bind %d = %+v, want %+v", i, b, w)
		}
	}
	if _, err := os.Stat(filepath.Join(p.paths["scratch"], "cache")); err != nil {
		t.Errorf("an emptyDir's subPath is made, as the kubelet makes it: %v", err)
	}
	if _, err := p.Mounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "../../etc"}}}); err == nil {
		t.Error("a subPath that leaves the volume was accepted")
	}
	if _, err := p.Mounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "nfs", MountPath: "/x"}}}); err == nil {
		t.Error("a mount of a volume the node does not set up was accepted")
	}
}

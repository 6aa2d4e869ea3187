package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/internal/ociimage"
)

// imageLayoutPod is a pod of podgate's own image, running its test app:
// the image's entrypoint is /podgate, the args pick the subcommand.
const imageLayoutPod = `apiVersion: v1
kind: Pod
metadata: {name: imaged}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %IMAGE%
    args: ["testapp", "--name", "served-from-the-image"]
    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`

// imageLayoutOf builds podgate's image into a new OCI layout, as
// hack/image.sh does, and returns the layout and the reference with
// its digest.
func imageLayoutOf(t *testing.T, bin string) (string, string) {
	t.Helper()
	const ref = "ghcr.io/podgate/podgate:e2e"
	dir := filepath.Join(t.TempDir(), "layout")
	start := time.Now()
	img, dig, err := ociimage.Build(bin, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.WriteLayout(dir, ref, img); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	size, err := layers[0].Size()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image of the %.1f MB podgate binary: layer %.1f MB compressed, built and written in %s", float64(st.Size())/1e6, float64(size)/1e6, took.Round(time.Millisecond))
	return dir, ref + "@" + dig.String()
}

// exeOf lists the processes running the program path.
func exeOf(path string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if target, err := os.Readlink(p); err == nil && target == path {
			pids = append(pids, strings.Split(p, "/")[2])
		}
	}
	return pids
}

func TestRunImageLayoutServesThePodOfTheImage(t *testing.T) {
	bin := podgateBinary(t)
	layoutDir, ref := imageLayoutOf(t, bin)
	// The extracted binary goes to the user cache: this test's own.
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	manifest := runManifest(t, strings.ReplaceAll(imageLayoutPod, "%IMAGE%", ref))

	r := runStart(t, bin, "-f", manifest, "--image-layout", layoutDir, "--pod-cidr", "127.0.93.0/24")
	r.waitPod("imaged ready", func(p *corev1.Pod) bool { return p.Name == "imaged" && runPodReady(p) })
	// Through the front door and the gate, as a user asks.
	m := r.waitFor(r.errOut, regexp.MustCompile(`podgate: imaged\.default is ready .*curl -H 'Host: imaged\.default\.example\.com' http://(127\.0\.0\.1:\d+)/`))
	req, err := http.NewRequest(http.MethodGet, "http://"+m[1]+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "imaged.default.example.com"
	resp, err := (&http.Client{Timeout: runWait, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "served-from-the-image" {
		t.Fatalf("GET through the front door = %d %q %v; want the test app's name", resp.StatusCode, body, err)
	}

	// It is the image's binary that serves, extracted into the cache
	// under its layer's digest.
	extracted, _ := filepath.Glob(filepath.Join(cache, "podgate", "images", "sha256", "*", "podgate"))
	if len(extracted) != 1 {
		t.Fatalf("extracted binaries in the cache: %v, want one", extracted)
	}
	if pids := exeOf(extracted[0]); len(pids) == 0 {
		t.Errorf("no process runs %s", extracted[0])
	}
}

func TestRunImageLayoutRefusesAChangedImage(t *testing.T) {
	bin := podgateBinary(t)
	layoutDir, ref := imageLayoutOf(t, bin)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	// Change a byte in the middle of the biggest blob, the layer.
	blobs, err := filepath.Glob(filepath.Join(layoutDir, "blobs", "sha256", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var layer string
	var biggest int64
	for _, b := range blobs {
		if st, err := os.Stat(b); err == nil && st.Size() > biggest {
			layer, biggest = b, st.Size()
		}
	}
	data, err := os.ReadFile(layer)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(layer, data, 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := runManifest(t, strings.ReplaceAll(imageLayoutPod, "%IMAGE%", ref))

	cmd := exec.Command(bin, "run", "-f", manifest, "--image-layout", layoutDir,
		"--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", "127.0.93.0/24")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitInvalid {
		t.Fatalf("podgate run of a changed image: %v, want exit %d\n%s", err, exitInvalid, out)
	}
	for _, want := range []string{`spec.containers[0].image: Invalid value: "` + ref + `"`, "digest mismatch", layoutDir} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "Started container") {
		t.Errorf("a container started:\n%s", out)
	}
}

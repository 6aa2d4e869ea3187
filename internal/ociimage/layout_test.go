package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// writeHello builds the hello binary greeting into an image written under
// ref into a new layout, and returns the layout and the digest.
func writeHello(t *testing.T, greeting, ref string) (string, v1.Hash) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	return dir, addHello(t, dir, greeting, ref)
}

func addHello(t *testing.T, dir, greeting, ref string) v1.Hash {
	t.Helper()
	img, dig := mustBuild(t, helloBinary(t, greeting), ref)
	if err := WriteLayout(dir, ref, img); err != nil {
		t.Fatal(err)
	}
	return dig
}

// runBinary runs a program and returns what it printed.
func runBinary(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return strings.TrimSpace(string(out))
}

func TestResolveFindsTheImageByTagAndByDigest(t *testing.T) {
	dir, dig := writeHello(t, "hello A", testRef)
	addHello(t, dir, "hello B", "hello") // Docker Hub's library/hello:latest
	for _, tc := range []struct {
		name, ref, want string
	}{
		{"by tag", testRef, "hello A"},
		{"by tag and digest", testRef + "@" + dig.String(), "hello A"},
		{"by digest", "example.test/hello@" + dig.String(), "hello A"},
		{"by digest under another name: the digest decides", "other.test/x:v9@" + dig.String(), "hello A"},
		{"a Docker Hub name as written", "hello", "hello B"},
		{"a Docker Hub name in full", "docker.io/library/hello:latest", "hello B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Layout{Dir: dir, CacheDir: t.TempDir()}
			img, err := l.Resolve(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := runBinary(t, img.Binary); got != tc.want {
				t.Errorf("the extracted program printed %q, want %q", got, tc.want)
			}
			if tc.want == "hello A" && img.Digest != dig {
				t.Errorf("digest %s, want the built image's %s", img.Digest, dig)
			}
			if !slices.Equal(img.Entrypoint, []string{img.Binary}) || len(img.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want [%s] and none", img.Entrypoint, img.Cmd, img.Binary)
			}
			if !strings.HasPrefix(img.Binary, l.CacheDir) {
				t.Errorf("program %s is outside the cache %s", img.Binary, l.CacheDir)
			}
			if img.Program != BinaryPath {
				t.Errorf("program in the image %q, want %s", img.Program, BinaryPath)
			}
			ep, cmd, prog, found, err := l.Entrypoint(tc.ref)
			if err != nil || !found || !slices.Equal(ep, img.Entrypoint) || len(cmd) != 0 || prog != img.Program {
				t.Errorf("Entrypoint(%s) = %q, %q, %q, %v, %v; want Resolve's", tc.ref, ep, cmd, prog, found, err)
			}
			// Every image podgate builds runs as the nonroot user, never
			// as root (a kubelet refuses root under runAsNonRoot).
			if img.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", img.User)
			}
			if u, found, err := l.User(tc.ref); err != nil || !found || u != img.User {
				t.Errorf("User(%s) = %q, %v, %v; want Resolve's %q", tc.ref, u, found, err, img.User)
			}
		})
	}
	t.Run("the package-level Resolve extracts into the user cache", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		bin, got, err := Resolve(dir, testRef)
		if err != nil || got != dig {
			t.Fatalf("Resolve = %s, %s, %v; want digest %s", bin, got, err, dig)
		}
		cache, _ := DefaultCacheDir()
		if !strings.HasPrefix(bin, cache+"/") || runBinary(t, bin) != "hello A" {
			t.Errorf("program %s: want the hello A binary under %s", bin, cache)
		}
	})
}

// index reads a layout's index.json.
func index(t *testing.T, dir string) v1.IndexManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func blobNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteLayoutReplacesATagAndRemovesUnusedBlobs(t *testing.T) {
	dir, digA := writeHello(t, "hello A", testRef)
	if idx := index(t, dir); len(idx.Manifests) != 1 ||
		idx.Manifests[0].Annotations[AnnotationRefName] != "v1" ||
		idx.Manifests[0].Annotations[AnnotationImageName] != testRef {
		t.Fatalf("index.json %+v: want one image annotated with tag v1 and name %s", idx.Manifests, testRef)
	}
	if n := len(blobNames(t, dir)); n != 3 {
		t.Errorf("%d blobs, want 3 (manifest, config, layer)", n)
	}
	digB := addHello(t, dir, "hello B", testRef)
	idx := index(t, dir)
	if len(idx.Manifests) != 1 || idx.Manifests[0].Digest != digB {
		t.Fatalf("index.json %+v: want only %s under %s", idx.Manifests, digB, testRef)
	}
	if slices.Contains(blobNames(t, dir), digA.Hex) {
		t.Errorf("the replaced image's manifest %s is still in blobs/", digA)
	}
	if n := len(blobNames(t, dir)); n != 3 {
		t.Errorf("%d blobs after replacing the image, want 3", n)
	}
	l := Layout{Dir: dir, CacheDir: t.TempDir()}
	if img, err := l.Resolve(testRef); err != nil || runBinary(t, img.Binary) != "hello B" {
		t.Errorf("Resolve(%s) = %+v, %v; want the hello B image", testRef, img, err)
	}
	if _, err := l.Resolve("example.test/hello@" + digA.String()); !errors.Is(err, ErrNotFound) {
		t.Errorf("the replaced image by digest: %v, want ErrNotFound", err)
	}

	addHello(t, dir, "hello A", "example.test/hello:v2")
	if n := len(index(t, dir).Manifests); n != 2 {
		t.Errorf("%d images after adding another tag, want 2", n)
	}
	for ref, want := range map[string]string{testRef: "hello B", "example.test/hello:v2": "hello A"} {
		if img, err := l.Resolve(ref); err != nil || runBinary(t, img.Binary) != want {
			t.Errorf("Resolve(%s) = %+v, %v; want the %s image", ref, img, err, want)
		}
	}
}

// blobFile is the file of one of an image's blobs in a layout.
func blobFile(t *testing.T, dir, which string) string {
	t.Helper()
	d := index(t, dir).Manifests[0]
	mp := filepath.Join(dir, "blobs", "sha256", d.Digest.Hex)
	if which == "manifest" {
		return mp
	}
	var m v1.Manifest
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	h := m.Config.Digest
	if which == "layer" {
		h = m.Layers[0].Digest
	}
	return filepath.Join(dir, "blobs", "sha256", h.Hex)
}

// rewriteConfig changes the config of a layout's only image and updates
// the manifest and index.json to match, as a tool that means to would:
// every digest is right, only the content says otherwise.
func rewriteConfig(t *testing.T, dir string, change func(*v1.ConfigFile)) {
	t.Helper()
	writeBlob := func(v any) v1.Descriptor {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", h.Hex), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return v1.Descriptor{Digest: h, Size: int64(len(b))}
	}
	var m v1.Manifest
	var cfg v1.ConfigFile
	for p, v := range map[string]any{blobFile(t, dir, "manifest"): &m, blobFile(t, dir, "config"): &cfg} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	change(&cfg)
	cd := writeBlob(&cfg)
	m.Config.Digest, m.Config.Size = cd.Digest, cd.Size
	md := writeBlob(&m)
	idx := index(t, dir)
	idx.Manifests[0].Digest, idx.Manifests[0].Size = md.Digest, md.Size
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolveRefusesAChangedImage(t *testing.T) {
	flip := func(which string) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			p := blobFile(t, dir, which)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*testing.T, string)
		want   string
	}{
		{"a byte of the manifest", flip("manifest"), "digest mismatch"},
		{"a byte of the config", flip("config"), "digest mismatch"},
		{"a byte of the layer", flip("layer"), "digest mismatch"},
		{"the layer cut short", func(t *testing.T, dir string) {
			p := blobFile(t, dir, "layer")
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "digest mismatch"},
		{"a config whose diff_id is not the layer's", func(t *testing.T, dir string) {
			rewriteConfig(t, dir, func(c *v1.ConfigFile) {
				c.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
			})
		}, "diff_id mismatch"},
		{"an image for another platform", func(t *testing.T, dir string) {
			rewriteConfig(t, dir, func(c *v1.ConfigFile) { c.Architecture = "elsewhere" })
		}, "the image is for linux/elsewhere; this machine is linux/" + goruntime.GOARCH},
		{"an image with nothing to run", func(t *testing.T, dir string) {
			rewriteConfig(t, dir, func(c *v1.ConfigFile) { c.Config.Entrypoint = nil })
		}, "neither an entrypoint nor a cmd"},
		{"an entrypoint that is not in the image", func(t *testing.T, dir string) {
			rewriteConfig(t, dir, func(c *v1.ConfigFile) { c.Config.Entrypoint = []string{"/bin/app"} })
		}, "/bin/app is in none of its 1 layer(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeHello(t, "hello A", testRef)
			tc.change(t, dir)
			cache := t.TempDir()
			l := Layout{Dir: dir, CacheDir: cache}
			_, err := l.Resolve(testRef)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), testRef) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Resolve = %v; want an error naming %s and %s, saying %q", err, testRef, dir, tc.want)
			}
			if errors.Is(err, ErrNotFound) {
				t.Errorf("%v is ErrNotFound: the image is there, it must not run as if absent", err)
			}
			if _, _, _, found, eerr := l.Entrypoint(testRef); eerr == nil || found {
				t.Errorf("Entrypoint: found %v, err %v; want the error", found, eerr)
			}
			var files []string
			_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, p)
				}
				return nil
			})
			if len(files) > 0 {
				t.Errorf("files left in the cache: %v", files)
			}
		})
	}
}

func TestResolveNamesWhatTheLayoutHolds(t *testing.T) {
	dir, dig := writeHello(t, "hello A", testRef)
	other := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	for _, tc := range []struct {
		name, ref string
		want      []string
	}{
		{"another tag", "example.test/hello:v2", []string{testRef + "@" + dig.String()}},
		{"another repository", "example.test/bye:v1", []string{testRef}},
		{"no tag is latest", "example.test/hello", []string{testRef}},
		{"another digest", testRef + "@" + other.String(), []string{testRef}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Layout{Dir: dir, CacheDir: t.TempDir()}
			_, err := l.Resolve(tc.ref)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve(%s) = %v, want ErrNotFound", tc.ref, err)
			}
			for _, w := range append([]string{`"` + tc.ref + `"`, dir}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if ep, _, _, found, err := l.Entrypoint(tc.ref); found || err != nil || ep != nil {
				t.Errorf("Entrypoint(%s) = %q, %v, %v; want not found and no error: it runs as without a layout", tc.ref, ep, found, err)
			}
		})
	}
	t.Run("a tag without a repository is found by digest only", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "bare")
		img, dig := mustBuild(t, helloBinary(t, "hello A"), testRef)
		p, err := layout.Write(bare, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{AnnotationRefName: "v1"})); err != nil {
			t.Fatal(err)
		}
		l := Layout{Dir: bare, CacheDir: t.TempDir()}
		_, err = l.Resolve(testRef)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `tag "v1" of no named repository`) {
			t.Errorf("Resolve by tag = %v; want ErrNotFound naming the bare tag", err)
		}
		if got, err := l.Resolve(testRef + "@" + dig.String()); err != nil || got.Digest != dig {
			t.Errorf("Resolve by digest = %+v, %v", got, err)
		}
	})
	t.Run("not a layout", func(t *testing.T) {
		plain := t.TempDir()
		_, err := Layout{Dir: plain, CacheDir: t.TempDir()}.Resolve(testRef)
		if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "not an OCI image layout") || !strings.Contains(err.Error(), plain) {
			t.Errorf("Resolve in an empty directory = %v", err)
		}
	})
	t.Run("a malformed reference", func(t *testing.T) {
		l := Layout{Dir: dir, CacheDir: t.TempDir()}
		if _, err := l.Resolve("example.test/hello@sha256:short"); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve = %v, want a reference error", err)
		}
		if _, _, _, found, err := l.Entrypoint("Not A Name"); found || err != nil {
			t.Errorf("Entrypoint of a name no layout can hold = %v, %v; want not found", found, err)
		}
	})
}

func TestResolveExtractsOnceForConcurrentCallers(t *testing.T) {
	dir, _ := writeHello(t, "hello A", testRef)
	l := Layout{Dir: dir, CacheDir: t.TempDir()}
	const n = 4
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			img, err := l.Resolve(testRef)
			paths[i], errs[i] = img.Binary, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Fatalf("caller %d: %s, %v; want %s", i, paths[i], errs[i], paths[0])
		}
	}
	before, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o755 {
		t.Errorf("extracted program mode %o, want 0755", before.Mode().Perm())
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(paths[0]), ".extract-*"))
	if len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	if _, err := l.Resolve(testRef); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("a later Resolve extracted the program again")
	}
}

// tarLayer is a layer of the given files (name → content; a name
// starting with ".wh." is a whiteout).
func tarLayer(t *testing.T, files map[string][]byte) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestResolveReadsLayersTopFirst(t *testing.T) {
	readBin := func(g string) []byte {
		b, err := os.ReadFile(helloBinary(t, g))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := readBin("hello A"), readBin("hello B")
	for _, tc := range []struct {
		name   string
		layers []map[string][]byte
		want   string // its output, or the error
	}{
		{"the upper layer's copy wins", []map[string][]byte{{"podgate": a}, {"podgate": b}}, "hello B"},
		{"a layer without it leaves the lower one's", []map[string][]byte{{"podgate": a}, {"etc/other": []byte("x")}}, "hello A"},
		{"a whiteout deletes it", []map[string][]byte{{"podgate": a}, {".wh.podgate": nil}}, "deleted by layer 1"},
		{"an opaque root deletes it", []map[string][]byte{{"podgate": a}, {".wh..wh..opq": nil}}, "deleted by layer 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ls []v1.Layer
			for _, files := range tc.layers {
				ls = append(ls, tarLayer(t, files))
			}
			img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), ls...)
			if err != nil {
				t.Fatal(err)
			}
			img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/podgate"}})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "layout")
			if err := WriteLayout(dir, testRef, img); err != nil {
				t.Fatal(err)
			}
			got, err := Layout{Dir: dir, CacheDir: t.TempDir()}.Resolve(testRef)
			if strings.HasPrefix(tc.want, "hello") {
				if err != nil || runBinary(t, got.Binary) != tc.want {
					t.Errorf("Resolve = %+v, %v; want the %s binary", got, err, tc.want)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Resolve = %+v, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
}

func TestResolveFollowsAnIndexToThisPlatform(t *testing.T) {
	mine, digMine := mustBuild(t, helloBinary(t, "hello A"), testRef)
	theirs, _ := mustBuild(t, helloBinary(t, "hello B"), testRef)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: theirs, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "elsewhere"}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: goruntime.GOARCH}}},
	)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationImageName: testRef})); err != nil {
		t.Fatal(err)
	}
	img, err := Layout{Dir: dir, CacheDir: t.TempDir()}.Resolve(testRef)
	if err != nil {
		t.Fatal(err)
	}
	if img.Digest != digMine || runBinary(t, img.Binary) != "hello A" {
		t.Errorf("Resolve = %+v; want this platform's image %s", img, digMine)
	}
}

// TestOpenLayoutChecksTheDirectoryAtOnce: a layout opens with its absolute
// path and the default cache; a directory that is not one is refused
// before any image is asked for.
func TestOpenLayoutChecksTheDirectoryAtOnce(t *testing.T) {
	dir, _ := writeHello(t, "hello A", testRef)
	t.Chdir(filepath.Dir(dir))
	l, err := OpenLayout(filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir != dir || l.CacheDir != cache {
		t.Errorf("OpenLayout = %+v, want Dir %s and CacheDir %s", l, dir, cache)
	}
	if _, err := OpenLayout(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not an OCI image layout") {
		t.Errorf("OpenLayout of an empty directory: %v, want not an OCI image layout", err)
	}
}

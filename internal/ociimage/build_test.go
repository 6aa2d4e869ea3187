package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/podgate/podgate/gate/contract"
)

const testRef = "example.test/hello:v1"

// copyFile copies src to a new file of dir, with another name, mode and
// modification time than the original.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(dst, b, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(dst, old, old); err != nil {
		t.Fatal(err)
	}
	return dst
}

func mustBuild(t *testing.T, bin, ref string) (v1.Image, v1.Hash) {
	t.Helper()
	img, dig, err := Build(bin, ref)
	if err != nil {
		t.Fatal(err)
	}
	return img, dig
}

func TestTheDigestDependsOnTheBinaryAlone(t *testing.T) {
	a, b := helloBinary(t, "hello A"), helloBinary(t, "hello B")
	_, digA := mustBuild(t, a, testRef)
	for _, tc := range []struct {
		name      string
		bin, ref  string
		wantEqual bool
	}{
		{"the same binary again", a, testRef, true},
		{"the same bytes at another path, mode and time", copyFile(t, a), testRef, true},
		{"the same binary under another reference", a, "ghcr.io/other/name:v2", true},
		{"another binary", b, testRef, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dig := mustBuild(t, tc.bin, tc.ref)
			if (dig == digA) != tc.wantEqual {
				t.Errorf("digest %s vs the first build's %s: want equal = %v", dig, digA, tc.wantEqual)
			}
		})
	}
}

func TestBuildMakesOneFileImage(t *testing.T) {
	bin := helloBinary(t, "hello A")
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := mustBuild(t, bin, testRef)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/podgate"}) || cfg.OS != "linux" || cfg.Architecture != goruntime.GOARCH {
		t.Errorf("config: entrypoint %q, platform %s/%s; want [/podgate] linux/%s", cfg.Config.Entrypoint, cfg.OS, cfg.Architecture, goruntime.GOARCH)
	}
	// The injector names the program by this path (the gate's startup
	// probe, `/podgate gate wait`), and the node agent maps it.
	if BinaryPath != contract.ImageBinary {
		t.Errorf("the images hold their program at %s, the injector and the node agent say %s", BinaryPath, contract.ImageBinary)
	}
	if !cfg.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %s, want the epoch", cfg.Created)
	}
	mt, err := img.MediaType()
	if err != nil || mt != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %q (%v), want OCI's", mt, err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != "podgate" || hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("entry %q type %q mode %o uid %d gid %d mtime %s; want podgate, a regular file, 0755, root, the epoch",
			hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime)
	}
	got, err := io.ReadAll(tr)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the layer's file is not the binary (%d bytes vs %d, %v)", len(got), len(want), err)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("a second entry in the layer (%v), want only the binary", err)
	}
}

func TestBuildRefusesWhatCannotBeAnImage(t *testing.T) {
	static := helloBinary(t, "hello A")
	dynamic, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bin, ref, want string
	}{
		{"a dynamically linked binary", dynamic, testRef, "dynamically linked"},
		{"a script", script, testRef, "not a Linux (ELF) executable"},
		{"a missing file", filepath.Join(t.TempDir(), "nothing"), testRef, "no such file"},
		{"a reference with a digest", static, testRef + "@sha256:" + strings.Repeat("a", 64), "written under a tag"},
		{"a malformed reference", static, "Example.test/UPPER:v1", "UPPER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Build(tc.bin, tc.ref)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.bin) || !strings.Contains(err.Error(), tc.ref) {
				t.Errorf("Build(%s, %s) = %v; want an error naming both and saying %q", tc.bin, tc.ref, err, tc.want)
			}
		})
	}
}

func TestWriteTarballHoldsTheImage(t *testing.T) {
	img, dig := mustBuild(t, helloBinary(t, "hello A"), testRef)
	p := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteTarball(p, testRef, img); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]string{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "manifest.json" {
			b, _ := io.ReadAll(tr)
			names[hdr.Name] = string(b)
		} else {
			names[hdr.Name] = ""
		}
	}
	if !strings.Contains(names["manifest.json"], `"RepoTags":["`+testRef+`"]`) {
		t.Errorf("manifest.json %q does not tag the image %s", names["manifest.json"], testRef)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := names[cfgName.String()]; !ok {
		t.Errorf("the tarball (%v) lacks the config %s of image %s", names, cfgName, dig)
	}
}

func TestWriteTarballsHoldsEveryImageUnderItsTag(t *testing.T) {
	a, _ := mustBuild(t, helloBinary(t, "hello A"), testRef)
	b, _ := mustBuild(t, helloBinary(t, "hello B"), "example.test/gate:v1")
	p := filepath.Join(t.TempDir(), "both.tar")
	if err := WriteTarballs(p, map[string]v1.Image{testRef: a, "example.test/gate:v1": b}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var manifest string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "manifest.json" {
			b, _ := io.ReadAll(tr)
			manifest = string(b)
		}
	}
	for _, ref := range []string{testRef, "example.test/gate:v1"} {
		if !strings.Contains(manifest, `"RepoTags":["`+ref+`"]`) {
			t.Errorf("manifest.json %q does not tag an image %s", manifest, ref)
		}
	}
	if err := WriteTarballs(p, map[string]v1.Image{testRef + "@sha256:" + strings.Repeat("a", 64): a}); err == nil || !strings.Contains(err.Error(), "written under a tag") {
		t.Errorf("a reference with a digest: %v, want refused", err)
	}
}

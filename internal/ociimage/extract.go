package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// extract finds the program prog (an absolute path in the image) in the
// layers, the top one first as an overlay filesystem would, and returns
// its copy in the cache. A copy is there only for a layer that was
// checked in full, so finding one needs no second reading of the layer.
func extract(dir, cache string, layers []v1.Descriptor, diffIDs []v1.Hash, prog string) (string, error) {
	target := strings.TrimPrefix(path.Clean(prog), "/")
	for i := len(layers) - 1; i >= 0; i-- {
		d := layers[i]
		if _, err := blobPath(dir, d.Digest); err != nil {
			return "", fmt.Errorf("layer %d: %w", i, err)
		}
		dst := filepath.Join(cache, d.Digest.Algorithm, d.Digest.Hex, filepath.FromSlash(target))
		if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
			return dst, nil
		}
		res, err := scanLayer(dir, d, diffIDs[i], target, dst)
		if err != nil {
			return "", fmt.Errorf("layer %d (%s): %w", i, d.Digest, err)
		}
		switch res {
		case found:
			return dst, nil
		case hidden:
			return "", fmt.Errorf("the image's program %s is deleted by layer %d (%s)", prog, i, d.Digest)
		}
	}
	return "", fmt.Errorf("the image's program %s is in none of its %d layer(s)", prog, len(layers))
}

type scanResult int

const (
	absent scanResult = iota // the layer does not touch the file
	found                    // the layer holds it: extracted
	hidden                   // the layer deletes it (a whiteout)
)

// scanLayer reads the whole layer blob d, checking its digest and size
// and its uncompressed content's diff_id, and extracts target into dst
// when the layer holds it — only once every check passed.
func scanLayer(dir string, d v1.Descriptor, diffID v1.Hash, target, dst string) (scanResult, error) {
	p, _ := blobPath(dir, d.Digest)
	f, err := os.Open(p)
	if err != nil {
		return absent, err
	}
	defer f.Close()
	blob := &hashingReader{r: f, h: sha256.New()}
	var content io.Reader
	switch d.MediaType {
	case types.OCILayer, types.OCIRestrictedLayer, types.DockerLayer, types.DockerForeignLayer:
		gz, err := gzip.NewReader(blob)
		if err != nil {
			return absent, checkBlob(d, blob, fmt.Errorf("gunzip: %w", err))
		}
		defer gz.Close()
		content = gz
	case types.OCIUncompressedLayer, types.OCIUncompressedRestrictedLayer, types.DockerUncompressedLayer:
		content = blob
	default:
		return absent, fmt.Errorf("media type %q: podgate reads gzip and uncompressed tar layers", d.MediaType)
	}
	diff := &hashingReader{r: content, h: sha256.New()}
	res, tmp, scanErr := scanTar(diff, target, filepath.Dir(dst))
	if tmp != "" {
		defer os.Remove(tmp) // a no-op once renamed
	}
	if scanErr == nil {
		// What follows the tar's end marker counts for the diff_id too.
		_, scanErr = io.Copy(io.Discard, diff)
	}
	if err := checkBlob(d, blob, scanErr); err != nil {
		return absent, err
	}
	if got := "sha256:" + hex.EncodeToString(diff.h.Sum(nil)); got != diffID.String() {
		return absent, fmt.Errorf("diff_id mismatch: the layer's content is %s, the config says %s", got, diffID)
	}
	if res == found {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return absent, err
		}
		// Rename replaces atomically: a concurrent extraction of the same
		// layer wrote the same checked bytes.
		if err := os.Rename(tmp, dst); err != nil {
			return absent, err
		}
	}
	return res, nil
}

// checkBlob reads the rest of the blob and checks its digest and size. A
// blob that does not match its descriptor is the error to report,
// whatever else went wrong reading it (readErr, reported otherwise).
func checkBlob(d v1.Descriptor, blob *hashingReader, readErr error) error {
	if _, err := io.Copy(io.Discard, blob); err != nil {
		return fmt.Errorf("read blob: %w", err)
	}
	if got := hex.EncodeToString(blob.h.Sum(nil)); got != d.Digest.Hex {
		return fmt.Errorf("digest mismatch: the blob's content is sha256:%s", got)
	}
	if blob.n != d.Size {
		return fmt.Errorf("size mismatch: the blob has %d bytes, its descriptor says %d", blob.n, d.Size)
	}
	return readErr
}

// scanTar reads a layer's tar for target, copying it into a temporary
// file in dstDir when found. A whiteout in the layer for target or a
// directory above it, or an opaque directory above it, hides the lower
// layers' copies (the layer's own copy, if any, still counts).
func scanTar(r io.Reader, target, dstDir string) (scanResult, string, error) {
	res := absent
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return res, "", nil
		}
		if err != nil {
			return absent, "", fmt.Errorf("read tar: %w", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dirName, base := path.Split(name)
		dirName = strings.TrimSuffix(dirName, "/")
		switch {
		case name == target:
			if hdr.Typeflag != tar.TypeReg {
				return absent, "", fmt.Errorf("the image's program /%s is not a regular file (tar type %q, link %q): podgate extracts regular files only", target, hdr.Typeflag, hdr.Linkname)
			}
			tmp, err := copyToTemp(tr, dstDir)
			if err != nil {
				return absent, tmp, err
			}
			// The rest of the layer must still be read: its digest is
			// checked over all of it.
			_, err = io.Copy(io.Discard, r)
			return found, tmp, err
		case base == ".wh..wh..opq" && under(target, dirName):
			res = hidden
		case strings.HasPrefix(base, ".wh."):
			gone := path.Join(dirName, strings.TrimPrefix(base, ".wh."))
			if gone == target || under(target, gone) {
				res = hidden
			}
		}
	}
}

// under reports whether p lies inside directory dir ("" is the root).
func under(p, dir string) bool {
	return dir == "" || strings.HasPrefix(p, dir+"/")
}

func copyToTemp(r io.Reader, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, ".extract-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return f.Name(), err
	}
	return f.Name(), f.Close()
}

// hashingReader hashes and counts what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	return n, err
}

// pruneBlobs removes the blobs of dir that no image of its index.json
// uses. A layout holding an image index (several platforms) is left as
// it is: its images' blobs are a level deeper than this looks.
func pruneBlobs(dir string) error {
	raw, err := readLimited(filepath.Join(dir, "index.json"))
	if err != nil {
		return err
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(raw, &index); err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	used := map[string]bool{}
	for _, d := range index.Manifests {
		if !d.MediaType.IsImage() {
			return nil
		}
		p, err := blobPath(dir, d.Digest)
		if err != nil {
			return nil
		}
		mraw, err := readLimited(p)
		if err != nil {
			return err
		}
		var m v1.Manifest
		if err := json.Unmarshal(mraw, &m); err != nil {
			return fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
		used[d.Digest.Hex], used[m.Config.Digest.Hex] = true, true
		for _, l := range m.Layers {
			used[l.Digest.Hex] = true
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if len(e.Name()) == sha256.Size*2 && !used[e.Name()] {
			if err := os.Remove(filepath.Join(dir, "blobs", "sha256", e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

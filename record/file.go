package record

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MinLimit is the smallest size bound a recording file takes: room for the
// header, a few facts and the truncated line.
const MinLimit = 4 << 10

// ParseLimit reads a size bound as Kubernetes writes quantities ("256Mi",
// "1G", "1000000"); 0 means no bound. The error names what is wrong, not
// the flag: the caller knows which flag it was.
func ParseLimit(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a size in bytes such as 256Mi or 1000000: %v", s, err)
	}
	n, ok := q.AsInt64()
	switch {
	case !ok || n < 0:
		return 0, fmt.Errorf("%q: want a whole number of bytes, 0 or more", s)
	case n > 0 && n < MinLimit:
		return 0, fmt.Errorf("%q: at least %d bytes (4Ki), or 0 for no bound", s, MinLimit)
	}
	return n, nil
}

// File is a recording being written to a file of its own.
type File struct {
	*Writer
	file *os.File
}

// Create creates (or truncates) path and starts a recording in it with
// header h, within limit bytes (0: none). A bound too small for the header
// leaves no file behind.
func Create(path string, h Header, limit int64) (*File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, h, limit)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return &File{Writer: w, file: f}, nil
}

// Close flushes the recording and closes its file.
func (f *File) Close() error {
	return errors.Join(f.Writer.Close(), f.file.Close())
}

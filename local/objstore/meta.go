package objstore

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// accept makes the collection's own copy of a caller's object, stamped with
// the collection's apiVersion and kind, after checking it can be keyed.
// A create may leave the name to generateName.
func (c *Collection[T]) accept(obj T, create bool) (T, error) {
	var zero T
	copied := obj.DeepCopyObject() // nil for a nil pointer
	if copied == nil {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("%s: nil object", c.gr))
	}
	o := copied.(T)
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if o.GetName() == "" && (!create || o.GetGenerateName() == "") {
		msg := "name is required"
		if create {
			msg = "name or generateName is required"
		}
		errs = append(errs, field.Required(meta.Child("name"), msg))
	}
	if o.GetNamespace() == "" {
		// Every kind here is namespaced; kubectl would have filled in
		// "default", an in-process writer has no such excuse.
		errs = append(errs, field.Required(meta.Child("namespace"), ""))
	}
	if len(errs) > 0 {
		return zero, apierrors.NewInvalid(c.gvk.GroupKind(), o.GetName(), errs)
	}
	o.GetObjectKind().SetGroupVersionKind(c.gvk)
	return o, nil
}

// generateName picks a free name of prefix plus five characters, the way the
// API server does for metadata.generateName. Callers hold c.mu.
func (c *Collection[T]) generateName(namespace, prefix string) (string, error) {
	// The API server's alphabet: no vowels, no look-alike digits, so
	// generated names never spell words.
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	for range 16 {
		b := make([]byte, 5)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		name := prefix + string(b)
		if _, taken := c.items[key{namespace, name}]; !taken {
			return name, nil
		}
	}
	return "", apierrors.NewGenerateNameConflict(c.gr, prefix, 1)
}

// newUID returns a random (version 4) UUID.
func newUID() types.UID {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func formatRV(v uint64) string { return strconv.FormatUint(v, 10) }

// parseRVUnchecked reads a version the collection itself wrote.
func parseRVUnchecked(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

// parseRV reads a caller's resourceVersion; "" and "0" both mean "any".
func parseRV(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q: must be a non-negative integer", s))
	}
	return v, nil
}

func errPrecondition(what, want, have string) error {
	return fmt.Errorf("precondition failed: %s in precondition: %s, %s in object meta: %s", what, want, what, have)
}

func secondsDuration(n int64) time.Duration { return time.Duration(n) * time.Second }

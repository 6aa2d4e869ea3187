package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podgate/podgate/local/objstore"
)

// maxBody bounds a request body, as the API server's 3 MiB limit does.
const maxBody = 3 << 20

// writes are the optional write verbs of a collection.
type writes[T objstore.Object] struct {
	// create enables POST on the namespaced list path.
	create bool
	// update takes the stored object and a client's new version and
	// returns what to store for PUT and PATCH on the object: for pods,
	// everything but the status, which only the status subresource
	// changes (the API server's pod strategy). nil disables both.
	update func(cur, in T) T
	// status is update for PUT and PATCH on .../{name}/status: the new
	// status over the stored object. nil: no status subresource.
	status func(cur, in T) T
	// patchSchema is the Go type strategic merge patches follow (a zero
	// value of the API type); nil refuses them with 415.
	patchSchema any
}

func newObject[T objstore.Object]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if len(body) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than %d bytes", maxBody))
	}
	return body, nil
}

// decodeBody reads a JSON object of the collection's kind. Only JSON is
// spoken: other media types (protobuf, CBOR, YAML) are 415, which makes a
// client that prefers them fall back to JSON.
func (c *collection[T]) decodeBody(r *http.Request) (T, error) {
	var zero T
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil || (mt != "application/json" && mt != runtime.ContentTypeProtobuf) {
			return zero, unsupportedMediaType(ct)
		}
	}
	body, err := readBody(r)
	if err != nil {
		return zero, err
	}
	o := newObject[T]()
	if mt == runtime.ContentTypeProtobuf {
		// client-go's generated clients send built-in kinds as protobuf
		// unless told otherwise (their answers they take as JSON).
		if err := decodeProtobuf(body, o); err != nil {
			return zero, apierrors.NewBadRequest(fmt.Sprintf("decoding %s from protobuf: %v", c.res.Kind, err))
		}
	} else if err := json.Unmarshal(body, o); err != nil {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", c.res.Kind, err))
	}
	if gvk := o.GetObjectKind().GroupVersionKind(); (gvk.Kind != "" && gvk.Kind != c.res.Kind) || (gvk.Version != "" && gvk.GroupVersion() != c.res.GroupVersion()) {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s %s", gvk, c.res.GroupVersion(), c.res.Kind))
	}
	return o, nil
}

// create answers POST on the namespaced collection: 201 with the object as
// stored.
func (c *collection[T]) createObject(w http.ResponseWriter, r *http.Request) {
	o, err := c.decodeBody(r)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	ns := r.PathValue("ns")
	switch o.GetNamespace() {
	case "":
		o.SetNamespace(ns)
	case ns:
	default:
		writeError(w, c.log, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	// The server owns these, as the API server does on create.
	o.SetResourceVersion("")
	o.SetUID("")
	o.SetDeletionTimestamp(nil)
	o.SetDeletionGracePeriodSeconds(nil)
	created, err := c.store.Create(o)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	writeJSON(w, http.StatusCreated, created)
}

func (c *collection[T]) updateObject(w http.ResponseWriter, r *http.Request) {
	c.put(w, r, c.writes.update)
}

func (c *collection[T]) updateStatus(w http.ResponseWriter, r *http.Request) {
	c.put(w, r, c.writes.status)
}

func (c *collection[T]) patchObject(w http.ResponseWriter, r *http.Request) {
	c.patch(w, r, c.writes.update)
}

func (c *collection[T]) patchStatus(w http.ResponseWriter, r *http.Request) {
	c.patch(w, r, c.writes.status)
}

// put replaces the object (or its status) with the body: the body's
// resourceVersion, when set, must be the stored one (409 Conflict).
func (c *collection[T]) put(w http.ResponseWriter, r *http.Request, merge func(cur, in T) T) {
	in, err := c.decodeBody(r)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if in.GetName() != name || (in.GetNamespace() != "" && in.GetNamespace() != ns) {
		writeError(w, c.log, apierrors.NewBadRequest(fmt.Sprintf("the name or namespace of the object (%s/%s) does not match the request's (%s/%s)", in.GetNamespace(), in.GetName(), ns, name)))
		return
	}
	in.SetNamespace(ns)
	c.modify(w, ns, name, func(cur T) (T, error) { return in, nil }, merge)
}

// patch applies a JSON merge patch (RFC 7386) or a strategic merge patch
// to the stored object. JSON patches (RFC 6902) are refused with 415.
func (c *collection[T]) patch(w http.ResponseWriter, r *http.Request, merge func(cur, in T) T) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	pt := types.PatchType(mt)
	if pt != types.MergePatchType && !(pt == types.StrategicMergePatchType && c.writes.patchSchema != nil) {
		writeError(w, c.log, unsupportedMediaType(ct))
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	c.modify(w, ns, name, func(cur T) (T, error) {
		var zero T
		orig, err := json.Marshal(cur)
		if err != nil {
			return zero, err
		}
		var patched []byte
		if pt == types.MergePatchType {
			patched, err = mergePatch(orig, body)
		} else {
			patched, err = strategicpatch.StrategicMergePatch(orig, body, c.writes.patchSchema)
		}
		if err != nil {
			return zero, apierrors.NewBadRequest(fmt.Sprintf("applying the %s patch: %v", pt, err))
		}
		in := newObject[T]()
		if err := json.Unmarshal(patched, in); err != nil {
			return zero, apierrors.NewBadRequest(fmt.Sprintf("the patched %s: %v", c.res.Kind, err))
		}
		if in.GetName() != name || in.GetNamespace() != ns {
			return zero, apierrors.NewBadRequest("a patch must not change metadata.name or metadata.namespace")
		}
		return in, nil
	}, merge)
}

// modify runs one read-modify-write under the store's lock and answers with
// the stored result.
func (c *collection[T]) modify(w http.ResponseWriter, ns, name string, next func(cur T) (T, error), merge func(cur, in T) T) {
	out, err := c.store.Modify(ns, name, func(o T) error {
		in, err := next(o)
		if err != nil {
			return err
		}
		if rv := in.GetResourceVersion(); rv != "" && rv != o.GetResourceVersion() {
			return apierrors.NewConflict(c.res.GroupResource(), name,
				fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if merge != nil {
			in = merge(o, in)
		}
		reflect.ValueOf(o).Elem().Set(reflect.ValueOf(in).Elem())
		return nil
	})
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// mergePatch applies an RFC 7386 JSON merge patch to doc.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("the patch is not JSON: %w", err)
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergeValue(dm[k], v)
	}
	return dm
}

func unsupportedMediaType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/vnd.kubernetes.protobuf, application/merge-patch+json, application/strategic-merge-patch+json (got %q)", ct),
	}}
}

// protobufScheme knows the kinds a client may send as protobuf.
var protobufScheme = func() *runtime.Scheme {
	sch := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(sch))
	return sch
}()

// decodeProtobuf reads the API server's protobuf envelope ("k8s\x00" and a
// runtime.Unknown holding the object) into o.
func decodeProtobuf(body []byte, o runtime.Object) error {
	s := protobuf.NewSerializer(protobufScheme, protobufScheme)
	_, _, err := s.Decode(body, nil, o)
	return err
}

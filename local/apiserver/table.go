package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/local/objstore"
)

// Tables: `kubectl get` asks the server for a meta.k8s.io Table
// (Accept: application/json;as=Table;v=v1;g=meta.k8s.io, then v1beta1, then
// plain JSON) and prints its columns. Without one it could only show NAME
// and AGE. The columns and cells come from package printers, which
// `podgate get` prints too.

// tableRequest is what a request for a Table asks: the Table's group
// version and what each row carries of its object.
type tableRequest struct {
	gv            schema.GroupVersion
	includeObject metav1.IncludeObjectPolicy
}

// tableGroup is the group of the Table kind.
const tableGroup = "meta.k8s.io"

// askedTable reads the request's Accept header as the API server
// negotiates it: the first media type it can serve wins. That is a Table
// (v1 or v1beta1) or plain JSON; a conversion podgate does not serve
// (as=PartialObjectMetadata…) is passed over for the next. nil: plain
// objects. A Table's includeObject comes from the query and defaults to
// Metadata, as on the API server.
func askedTable(r *http.Request) (*tableRequest, error) {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != "application/json" && mt != "*/*" && mt != "application/*") {
			continue
		}
		switch as := params["as"]; {
		case as == "":
			return nil, nil
		case as == "Table" && params["g"] == tableGroup && (params["v"] == "v1" || params["v"] == "v1beta1"):
			return tableOptions(r, schema.GroupVersion{Group: tableGroup, Version: params["v"]})
		}
	}
	return nil, nil
}

func tableOptions(r *http.Request, gv schema.GroupVersion) (*tableRequest, error) {
	include := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	switch include {
	case "":
		include = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		err := field.Invalid(field.NewPath("includeObject"), include, "must be 'Metadata', 'Object', 'None', or empty")
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", err))
	}
	return &tableRequest{gv: gv, includeObject: include}, nil
}

// asTable is objs as the Table tr asks for, at resourceVersion rv; noHeaders
// leaves the column definitions out (watch events after the first).
func (c *collection[T]) asTable(objs []T, rv string, tr *tableRequest, noHeaders bool) *metav1.Table {
	t := c.table.Table(objs, c.now(), noHeaders)
	t.TypeMeta = metav1.TypeMeta{APIVersion: tr.gv.String(), Kind: "Table"}
	t.ResourceVersion = rv
	for i := range t.Rows {
		row := &t.Rows[i]
		obj, ok := row.Object.Object.(objstore.Object)
		if !ok {
			continue
		}
		switch tr.includeObject {
		case metav1.IncludeObject:
			// Typed, as the API server converts it to the resource's
			// version.
			obj.GetObjectKind().SetGroupVersionKind(c.res.GroupVersion().WithKind(c.res.Kind))
		case metav1.IncludeMetadata:
			// What kubectl reads a namespace and labels from.
			partial := meta.AsPartialObjectMetadata(obj)
			partial.SetGroupVersionKind(tr.gv.WithKind("PartialObjectMetadata"))
			row.Object.Object = partial
		case metav1.IncludeNone:
			row.Object.Object = nil
		}
	}
	return t
}

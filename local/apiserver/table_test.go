package apiserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// kubectlAccept is what kubectl get sends: a v1 Table, else a v1beta1
// one, else the objects.
const kubectlAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func (s *testServer) get(t *testing.T, path, accept string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// rowObject is what a Table row carries of its object.
type rowObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       *json.RawMessage  `json:"spec"`
}

type tableBody struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ListMeta   `json:"metadata"`
	ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	Rows              []struct {
		Cells  []any      `json:"cells"`
		Object *rowObject `json:"object"`
	} `json:"rows"`
}

func TestTablesAreServedAsKubectlAsksForThem(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	s := startServer(t, Config{Clock: clk})
	p := testPod("default", "web", map[string]string{"app": "web"})
	p.CreationTimestamp = metav1.NewTime(clk.Now().Add(-90 * time.Second))
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	created := s.createPod(t, p)

	tests := []struct {
		name, path, accept string
		wantKind           string // apiVersion/kind of the answer
		wantRowObject      string // apiVersion/kind of the row's object; "" none
		wantSpec           bool
	}{
		{"kubectl get asks for a v1 Table; the rows carry metadata by default", "/api/v1/namespaces/default/pods", kubectlAccept,
			"meta.k8s.io/v1/Table", "meta.k8s.io/v1/PartialObjectMetadata", false},
		{"includeObject=Metadata is the default", "/api/v1/pods?includeObject=Metadata", kubectlAccept,
			"meta.k8s.io/v1/Table", "meta.k8s.io/v1/PartialObjectMetadata", false},
		{"includeObject=Object carries the whole typed object", "/api/v1/pods?includeObject=Object", kubectlAccept,
			"meta.k8s.io/v1/Table", "v1/Pod", true},
		{"includeObject=None carries none", "/api/v1/pods?includeObject=None", kubectlAccept, "meta.k8s.io/v1/Table", "", false},
		{"a v1beta1 Table when asked first", "/api/v1/pods", "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
			"meta.k8s.io/v1beta1/Table", "meta.k8s.io/v1beta1/PartialObjectMetadata", false},
		{"one object is a Table of one row", "/api/v1/namespaces/default/pods/web", kubectlAccept,
			"meta.k8s.io/v1/Table", "meta.k8s.io/v1/PartialObjectMetadata", false},
		{"a conversion podgate does not serve falls through to the next", "/api/v1/pods",
			"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
			"meta.k8s.io/v1/Table", "meta.k8s.io/v1/PartialObjectMetadata", false},
		{"plain JSON stays the objects", "/api/v1/pods", "application/json", "v1/PodList", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := s.get(t, tt.path, tt.accept)
			var got tableBody
			if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil {
				t.Fatalf("%d %v\n%s", code, err, body)
			}
			if kind := got.APIVersion + "/" + got.Kind; kind != tt.wantKind {
				t.Fatalf("answer is a %s, want %s", kind, tt.wantKind)
			}
			if got.Kind != "Table" {
				return
			}
			if got.ResourceVersion != created.ResourceVersion {
				t.Errorf("resourceVersion %q, want %q (a watch starts from it)", got.ResourceVersion, created.ResourceVersion)
			}
			if h := strings.Join(headerNames(got.ColumnDefinitions), "|"); h != "Name|Ready|Status|Restarts|Age|IP|Node|Nominated Node|Readiness Gates" {
				t.Errorf("columns %s: want every column, the wide ones too", h)
			}
			if len(got.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(got.Rows))
			}
			row := got.Rows[0]
			if cells := row.Cells; len(cells) != 9 || cells[0] != "web" || cells[1] != "1/1" || cells[2] != "Running" || cells[3] != "0" || cells[4] != "90s" {
				t.Errorf("cells %v, want web 1/1 Running 0 90s (AGE by the server's clock) and the wide cells", cells)
			}
			switch {
			case tt.wantRowObject == "" && row.Object != nil:
				t.Errorf("row object %+v, want none", row.Object)
			case tt.wantRowObject != "" && (row.Object == nil || row.Object.APIVersion+"/"+row.Object.Kind != tt.wantRowObject):
				t.Errorf("row object %+v, want a %s", row.Object, tt.wantRowObject)
			case row.Object != nil && (row.Object.Metadata.Namespace != "default" || row.Object.Metadata.Labels["app"] != "web"):
				t.Errorf("row object metadata %+v: kubectl reads the namespace and labels from it", row.Object.Metadata)
			case row.Object != nil && (row.Object.Spec != nil) != tt.wantSpec:
				t.Errorf("row object has spec: %v, want %v", row.Object.Spec != nil, tt.wantSpec)
			}
		})
	}
}

func headerNames(cols []metav1.TableColumnDefinition) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return out
}

func TestAnUnknownIncludeObjectIsABadRequest(t *testing.T) {
	s := startServer(t, Config{})
	code, body := s.get(t, "/api/v1/pods?includeObject=Everything", kubectlAccept)
	st := decodeStatus(t, string(body))
	want := `Unable to convert to Table as requested: includeObject: Invalid value: "Everything": must be 'Metadata', 'Object', 'None', or empty`
	if code != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || st.Message != want {
		t.Errorf("%d %s %q, want 400 BadRequest %q", code, st.Reason, st.Message, want)
	}
}

// kubectl get -w watches with the same Accept: every event carries a
// one-row Table, the column definitions only in the first.
func TestAWatchAskingForTablesGetsOneRowTables(t *testing.T) {
	s := startServer(t, Config{})
	s.createPod(t, testPod("default", "a", nil))
	req, err := http.NewRequest(http.MethodGet, "http://"+s.addr+"/api/v1/namespaces/default/pods?watch=true&resourceVersion=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", kubectlAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() (string, tableBody) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		var ev struct {
			Type   string    `json:"type"`
			Object tableBody `json:"object"`
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("%q: %v", lines.Text(), err)
		}
		return ev.Type, ev.Object
	}
	typ, first := next()
	if typ != "ADDED" || first.Kind != "Table" || len(first.ColumnDefinitions) != 9 || len(first.Rows) != 1 || first.Rows[0].Cells[0] != "a" {
		t.Fatalf("first event %s %+v: want ADDED, a Table with the columns and pod a's row", typ, first)
	}
	if first.Rows[0].Object == nil || first.Rows[0].Object.Kind != "PartialObjectMetadata" {
		t.Errorf("row object %+v, want its metadata", first.Rows[0].Object)
	}
	s.createPod(t, testPod("default", "b", nil))
	typ, second := next()
	if typ != "ADDED" || second.Kind != "Table" || len(second.ColumnDefinitions) != 0 || len(second.Rows) != 1 || second.Rows[0].Cells[0] != "b" {
		t.Errorf("second event %s %+v: want ADDED, a Table without columns and pod b's row", typ, second)
	}
}

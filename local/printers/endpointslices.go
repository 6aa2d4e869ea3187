package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EndpointSliceTable is the API server's EndpointSlice table: NAME
// ADDRESSTYPE PORTS ENDPOINTS AGE, with no wide columns.
var EndpointSliceTable = TableOf[*discoveryv1.EndpointSlice]{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
		{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
		{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
		ageColumn,
	},
	Cells: endpointSliceCells,
}

// EndpointSlices print as `kubectl get endpointslices`.
var EndpointSlices = Resource{NameKind: "endpointslice.discovery.k8s.io", Columns: EndpointSliceTable.Columns}

// EndpointSliceRow is kubectl's row.
func EndpointSliceRow(s *discoveryv1.EndpointSlice, wide bool, now time.Time) []string {
	return EndpointSliceTable.Row(s, wide, now)
}

// endpointSliceCells: up to three ports (number, else name, else "*") and
// three addresses, then "+ N more...", and "<unset>" for none.
func endpointSliceCells(s *discoveryv1.EndpointSlice, now time.Time) []any {
	var ports []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	var addrs []string
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	return []any{s.Name, string(s.AddressType), firstThree(ports), firstThree(addrs), age(s.CreationTimestamp, now)}
}

func firstThree(list []string) string {
	switch {
	case len(list) == 0:
		return "<unset>"
	case len(list) > 3:
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:3], ","), len(list)-3)
	}
	return strings.Join(list, ",")
}

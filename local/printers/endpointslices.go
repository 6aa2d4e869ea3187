package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// EndpointSlices print as `kubectl get endpointslices`.
var EndpointSlices = Resource{
	NameKind:    "endpointslice.discovery.k8s.io",
	Columns:     []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
	WideColumns: []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
}

// EndpointSliceRow is kubectl's: up to three ports and three addresses,
// then "+ N more...", and "<unset>" for none.
func EndpointSliceRow(s *discoveryv1.EndpointSlice, _ bool, now time.Time) []string {
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
	return []string{s.Name, string(s.AddressType), firstThree(ports), firstThree(addrs), age(s.CreationTimestamp, now)}
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

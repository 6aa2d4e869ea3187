package printers

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func podItem(ns, name string) Item {
	p := podWith(corev1.PodRunning, status("app", true, running()))
	p.Namespace, p.Name = ns, name
	p.APIVersion, p.Kind = "v1", "Pod"
	return Item{Obj: p, Namespace: ns, Name: name, Row: func(wide bool, now time.Time) []string { return PodRow(p, wide, now) }}
}

func TestPrinterFormats(t *testing.T) {
	clock := func() time.Time { return now }
	for _, tt := range []struct {
		name  string
		p     Printer
		print func(p *Printer) error
		want  string
	}{
		{"a watch row lines up with the list printed before it", Printer{Resource: Pods, Headers: true, Now: clock},
			func(p *Printer) error {
				if err := p.PrintList(nil, []Item{podItem("default", "a")}); err != nil {
					return err
				}
				return p.PrintObject(podItem("default", "a-longer-name"))
			},
			"NAME   READY   STATUS    RESTARTS   AGE\na      1/1     Running   0          5m\na-longer-name   1/1     Running   0          5m\n"},
		{"all namespaces put NAMESPACE first", Printer{Resource: Pods, Headers: true, AllNamespaces: true, Now: clock},
			func(p *Printer) error { return p.PrintList(nil, []Item{podItem("prod", "a")}) },
			"NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE\nprod        a      1/1     Running   0          5m\n"},
		{"no headers", Printer{Resource: Pods, Now: clock},
			func(p *Printer) error { return p.PrintList(nil, []Item{podItem("default", "a")}) },
			"a     1/1   Running   0     5m\n"},
		{"-o name prints kind/name", Printer{Resource: EndpointSlices, Format: "name"},
			func(p *Printer) error { return p.PrintList(nil, []Item{{Name: "hello-x"}}) },
			"endpointslice.discovery.k8s.io/hello-x\n"},
		{"yaml documents of a watch are separated", Printer{Resource: Pods, Format: "yaml"},
			func(p *Printer) error {
				if err := p.PrintObject(Item{Obj: map[string]any{"a": 1}}); err != nil {
					return err
				}
				return p.PrintObject(Item{Obj: map[string]any{"b": 2}})
			},
			"a: 1\n---\nb: 2\n"},
		{"objects by name are wrapped in a List", Printer{Resource: Pods, Format: "json"},
			func(p *Printer) error { return p.PrintList(nil, []Item{{Obj: map[string]any{"a": 1}}}) },
			"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n            \"a\": 1\n        }\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := tt.p
			p.Out = &out
			if err := tt.print(&p); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", out.String(), tt.want)
			}
		})
	}
}

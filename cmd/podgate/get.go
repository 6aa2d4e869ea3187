package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/objstore"
)

func init() { register(newGetCmd) }

// getOptions are the flags of `podgate get`, named as kubectl names them.
type getOptions struct {
	api           string
	output        string
	watch         bool
	selector      string
	fieldSelector string
	namespace     string
	allNamespaces bool
	noHeaders     bool
}

func newGetCmd() *cobra.Command {
	var o getOptions
	cmd := &cobra.Command{
		Use:   "get pods|events|endpoints|services [NAME...]",
		Short: "Show pods, events, endpoints or Knative services of a running 'podgate run'",
		Long: `Show what 'podgate run' is running, read from its control API, in the tables
kubectl prints: pods with kubectl's READY/STATUS/RESTARTS rules, events with
repeats folded ("2m (x3 over 5m)"), EndpointSlices, and Knative Services as
'kubectl get ksvc' shows them.

Resource types: pods (po), events (ev), endpoints (endpointslices, ep),
services (ksvc). -o json|yaml prints the list as the API serves it.

Exit status: 0 ok, 1 not found or podgate not reachable, 2 usage error.`,
		Example: `  podgate get pods
  podgate get pods -o wide -w
  podgate get events
  podgate get pods -l serving.knative.dev/service=hello -o yaml
  podgate get endpoints --api 127.0.0.1:9701`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.api, "api", api.DefaultAddr, "address of the control API of 'podgate run'")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml or name")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, print a row for every change")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. serving.knative.dev/service=hello,app!=db")
	f.StringVar(&o.fieldSelector, "field-selector", "", "field selector, e.g. status.phase=Running")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace to show")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "show every namespace")
	f.BoolVar(&o.noHeaders, "no-headers", false, "leave out the header row")
	return cmd
}

func runGet(cmd *cobra.Command, o getOptions, args []string) error {
	if len(args) == 0 {
		return usageErrorf("you must specify the type of resource to get: %s", strings.Join(kindNames(), ", "))
	}
	k := findKind(args[0])
	if k == nil {
		return usageErrorf("the server doesn't have a resource type %q (podgate serves %s)", args[0], strings.Join(kindNames(), ", "))
	}
	names := args[1:]
	switch o.output {
	case "", "wide", "json", "yaml", "name":
	default:
		return usageErrorf("-o %q: must be wide, json, yaml or name", o.output)
	}
	if err := checkNamespaceFlag(o.namespace); err != nil {
		return err
	}
	// Selectors are parsed here as the API server would parse them: a
	// malformed one is a usage error, not a refusal by the server.
	if _, err := labels.Parse(o.selector); err != nil {
		return usageErrorf("-l %q: %v", o.selector, err)
	}
	if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
		return usageErrorf("--field-selector %q: %v", o.fieldSelector, err)
	}
	if len(names) > 0 && o.selector != "" {
		return usageErrorf("name cannot be provided when a selector is specified")
	}
	if o.watch && len(names) > 1 {
		return usageErrorf("watch is only supported on one resource or on a whole collection, not on %d names", len(names))
	}
	if o.allNamespaces && len(names) > 0 {
		return usageErrorf("a resource cannot be retrieved by name across all namespaces")
	}
	c, err := api.NewClient(o.api)
	if err != nil {
		return usageErrorf("--api: %v", err)
	}
	defer c.Close()

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &printer{out: cmd.OutOrStdout(), kind: k, format: o.output, allNamespaces: o.allNamespaces, headers: !o.noHeaders}
	ns := o.namespace
	if o.allNamespaces {
		ns = ""
	}
	opts := api.ListOptions{Namespace: ns, LabelSelector: o.selector, FieldSelector: o.fieldSelector}

	if len(names) > 0 && !o.watch {
		return getByName(ctx, c, p, ns, names)
	}
	if len(names) == 1 {
		// As kubectl does for `get -w NAME`: watch the list, narrowed to it.
		opts.FieldSelector = joinSelectors(opts.FieldSelector, "metadata.name="+names[0])
	}
	list, items, err := k.list(ctx, c, opts)
	if err != nil {
		return cliError(err)
	}
	if err := p.printList(list, items); err != nil {
		return err
	}
	if len(items) == 0 && !o.watch && p.format != "json" && p.format != "yaml" {
		if ns == "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "No resources found")
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "No resources found in %s namespace.\n", ns)
		}
	}
	if !o.watch {
		return nil
	}
	opts.ResourceVersion = listVersion(list)
	return watchAndPrint(ctx, c, p, opts)
}

func getByName(ctx context.Context, c *api.Client, p *printer, ns string, names []string) error {
	var items []item
	var missing []error
	for _, name := range names {
		it, err := p.kind.get(ctx, c, ns, name)
		if apierrors.IsNotFound(err) {
			missing = append(missing, err)
			continue
		}
		if err != nil {
			return cliError(err)
		}
		items = append(items, it)
	}
	var err error
	if len(names) == 1 && len(items) == 1 {
		err = p.printObject(items[0])
	} else if len(items) > 0 {
		err = p.printList(nil, items)
	}
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return invalidf("%v", errors.Join(missing...))
	}
	return nil
}

func watchAndPrint(ctx context.Context, c *api.Client, p *printer, opts api.ListOptions) error {
	w, err := c.Watch(ctx, p.kind.resource(), opts)
	if err != nil {
		return cliError(err)
	}
	defer w.Close()
	for {
		ev, err := w.Next()
		switch {
		case errors.Is(err, io.EOF) || ctx.Err() != nil:
			// The server went away or the user pressed Ctrl-C: done, as
			// kubectl's -w is.
			return nil
		case err != nil:
			return cliError(err)
		}
		if ev.Type == watch.Bookmark {
			continue
		}
		it, err := p.kind.decode(ev)
		if err != nil {
			return invalidf("%v", err)
		}
		if err := p.printObject(it); err != nil {
			return err
		}
	}
}

// checkNamespaceFlag refuses a -n that can be no namespace (a DNS label).
func checkNamespaceFlag(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usageErrorf("-n %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// cliError turns client errors into exit 1 with the message a user can act
// on: "cannot reach podgate at …", `pods "x" not found`.
func cliError(err error) error {
	return invalidf("%v", err)
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func listVersion(list any) string {
	if l, ok := list.(interface{ GetResourceVersion() string }); ok {
		return l.GetResourceVersion()
	}
	return ""
}

// item is one object ready to print.
type item struct {
	obj       any // the typed object with apiVersion and kind, for -o json|yaml
	namespace string
	name      string
	row       func(wide bool, now time.Time) []string
}

// kind is one resource type `podgate get` knows.
type kind interface {
	resource() api.Resource
	names() []string
	// nameKind prefixes -o name output: "pod", "endpointslice.discovery.k8s.io".
	nameKind() string
	columns(wide bool) []string
	list(ctx context.Context, c *api.Client, opts api.ListOptions) (list any, items []item, err error)
	get(ctx context.Context, c *api.Client, namespace, name string) (item, error)
	decode(ev api.WatchEvent) (item, error)
}

// kindOf implements kind for one API type T (PT is *T).
type kindOf[T any, PT interface {
	*T
	objstore.Object
}] struct {
	res      api.Resource
	aliases  []string
	short    string
	cols     []string
	wideCols []string
	row      func(obj PT, wide bool, now time.Time) []string
	// sort orders list rows; nil keeps the API's order (namespace, name).
	sort func(items []T)
}

// listOf has the JSON shape of PodList, EventList, … for any item type.
type listOf[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []T `json:"items"`
}

func (k *kindOf[T, PT]) resource() api.Resource { return k.res }
func (k *kindOf[T, PT]) names() []string        { return k.aliases }
func (k *kindOf[T, PT]) nameKind() string       { return k.short }

func (k *kindOf[T, PT]) columns(wide bool) []string {
	if wide {
		return k.wideCols
	}
	return k.cols
}

func (k *kindOf[T, PT]) list(ctx context.Context, c *api.Client, opts api.ListOptions) (any, []item, error) {
	var l listOf[T]
	if err := c.List(ctx, k.res, opts, &l); err != nil {
		return nil, nil, err
	}
	if k.sort != nil {
		k.sort(l.Items)
	}
	items := make([]item, len(l.Items))
	for i := range l.Items {
		items[i] = k.item(&l.Items[i])
	}
	return &l, items, nil
}

func (k *kindOf[T, PT]) get(ctx context.Context, c *api.Client, namespace, name string) (item, error) {
	obj := PT(new(T))
	if err := c.Get(ctx, k.res, namespace, name, obj); err != nil {
		return item{}, err
	}
	return k.item(obj), nil
}

func (k *kindOf[T, PT]) decode(ev api.WatchEvent) (item, error) {
	obj := PT(new(T))
	if err := ev.Decode(obj); err != nil {
		return item{}, err
	}
	return k.item(obj), nil
}

func (k *kindOf[T, PT]) item(obj PT) item {
	// List items come without apiVersion and kind (as from the API server);
	// printed objects carry them, as kubectl's do.
	obj.GetObjectKind().SetGroupVersionKind(k.res.GroupVersion().WithKind(k.res.Kind))
	return item{obj: obj, namespace: obj.GetNamespace(), name: obj.GetName(),
		row: func(wide bool, now time.Time) []string { return k.row(obj, wide, now) }}
}

var kinds = []kind{
	&kindOf[corev1.Pod, *corev1.Pod]{
		res: api.Pods, aliases: []string{"pods", "pod", "po"}, short: "pod",
		cols:     []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		wideCols: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"},
		row:      podRow,
	},
	&kindOf[corev1.Event, *corev1.Event]{
		res: api.Events, aliases: []string{"events", "event", "ev"}, short: "event",
		cols:     []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		wideCols: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"},
		row:      eventRow,
		sort:     sortEvents,
	},
	&kindOf[discoveryv1.EndpointSlice, *discoveryv1.EndpointSlice]{
		res: api.EndpointSlices, aliases: []string{"endpoints", "endpoint", "ep", "endpointslices", "endpointslice"},
		short:    "endpointslice.discovery.k8s.io",
		cols:     []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
		wideCols: []string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"},
		row:      endpointSliceRow,
	},
	&kindOf[objstore.KnativeService, *objstore.KnativeService]{
		res: api.Services, aliases: []string{"services", "service", "ksvc", "ksvcs", "kservice"},
		short:    "service.serving.knative.dev",
		cols:     []string{"NAME", "URL", "LATESTCREATED", "LATESTREADY", "READY", "REASON"},
		wideCols: []string{"NAME", "URL", "LATESTCREATED", "LATESTREADY", "READY", "REASON"},
		row:      serviceRow,
	},
}

func findKind(name string) kind {
	for _, k := range kinds {
		if slices.Contains(k.names(), strings.ToLower(name)) {
			return k
		}
	}
	return nil
}

func kindNames() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.names()[0])
	}
	return out
}

// printer writes items in one output format. For tables it keeps the
// column widths it has used, so rows printed by -w line up with the list.
type printer struct {
	out           io.Writer
	kind          kind
	format        string
	allNamespaces bool
	headers       bool
	now           func() time.Time // nil: time.Now

	widths        []int
	headerPrinted bool
}

func (p *printer) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// printList prints a list: for json|yaml the list object itself when there
// is one (a list by name is wrapped in a List, as kubectl does).
func (p *printer) printList(list any, items []item) error {
	switch p.format {
	case "json", "yaml":
		if list == nil {
			objs := make([]any, len(items))
			for i, it := range items {
				objs[i] = it.obj
			}
			list = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": objs}
		}
		return p.encode(list)
	case "name":
		for _, it := range items {
			fmt.Fprintf(p.out, "%s/%s\n", p.kind.nameKind(), it.name)
		}
		return nil
	}
	return p.rows(items)
}

func (p *printer) printObject(it item) error {
	switch p.format {
	case "json", "yaml":
		return p.encode(it.obj)
	case "name":
		fmt.Fprintf(p.out, "%s/%s\n", p.kind.nameKind(), it.name)
		return nil
	}
	return p.rows([]item{it})
}

func (p *printer) encode(v any) error {
	if p.format == "yaml" {
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		if p.headerPrinted {
			// Watching: separate the documents.
			fmt.Fprintln(p.out, "---")
		}
		p.headerPrinted = true
		_, err = p.out.Write(data)
		return err
	}
	// Four spaces, as kubectl indents.
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = fmt.Fprintf(p.out, "%s\n", data)
	return err
}

func (p *printer) rows(items []item) error {
	wide := p.format == "wide"
	now := p.clock()
	var rows [][]string
	if p.headers && !p.headerPrinted && len(items) > 0 {
		rows = append(rows, p.withNamespace("NAMESPACE", p.kind.columns(wide)))
		p.headerPrinted = true
	}
	for _, it := range items {
		cells := it.row(wide, now)
		for i := range cells {
			cells[i] = escapeCell(cells[i])
		}
		rows = append(rows, p.withNamespace(it.namespace, cells))
	}
	var buf bytes.Buffer
	writeTable(&buf, rows, &p.widths)
	_, err := p.out.Write(buf.Bytes())
	return err
}

func (p *printer) withNamespace(ns string, cells []string) []string {
	if !p.allNamespaces {
		return cells
	}
	return append([]string{ns}, cells...)
}

// writeTable pads each cell but the last to its column's width plus three
// spaces, at least six: the layout of kubectl's tabwriter. widths persists
// across calls and only grows.
func writeTable(w *bytes.Buffer, rows [][]string, widths *[]int) {
	const padding, minWidth = 3, 6
	for _, r := range rows {
		for i, c := range r {
			if i >= len(*widths) {
				*widths = append(*widths, 0)
			}
			(*widths)[i] = max((*widths)[i], len([]rune(c))+padding, minWidth)
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				w.WriteString(c)
				break
			}
			w.WriteString(c)
			w.WriteString(strings.Repeat(" ", (*widths)[i]-len([]rune(c))))
		}
		w.WriteByte('\n')
	}
}

// escapeCell keeps one cell on one line, as kubectl does: a multi-line
// value (an exec probe's output in an event message) is cut at the first
// line break with "...", and control characters are shown, not obeyed.
func escapeCell(s string) string {
	if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
		s = s[:i] + "..."
	}
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case isControl(r):
			fmt.Fprintf(&b, "^%c", r^0x40)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// age is kubectl's AGE: a human duration since t, "<unknown>" when unset.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// podRow is kubectl's pod row: NAME READY STATUS RESTARTS AGE, and with
// wide IP NODE NOMINATED NODE READINESS GATES.
func podRow(p *corev1.Pod, wide bool, now time.Time) []string {
	s := summarizePod(p)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, age(metav1.NewTime(s.lastRestart), now))
	}
	row := []string{p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, restarts, age(p.CreationTimestamp, now)}
	if !wide {
		return row
	}
	ip := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(p.Spec.ReadinessGates); n > 0 {
		met := 0
		for _, g := range p.Spec.ReadinessGates {
			if c := podCondition(p, g.ConditionType); c != nil && c.Status == corev1.ConditionTrue {
				met++
			}
		}
		gates = fmt.Sprintf("%d/%d", met, n)
	}
	return append(row, orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), gates)
}

// podSummary is what kubectl makes of a pod's status.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time
}

// summarizePod follows kubectl's printPod (pkg/printers/internalversion)
// rule by rule, as of v1.35 (checked against upstream v1.29 and v1.35-era
// copies; the "Completed turns into the failure" and "no Terminating once
// Succeeded/Failed" rules are the newer ones):
//   - STATUS starts as the phase, or status.reason when set; a PodScheduled
//     condition with reason SchedulingGated shows SchedulingGated.
//   - Init containers are walked in order: completed ones (exit 0) and
//     started native sidecars are passed (a ready sidecar counts in READY);
//     the first other one decides "Init:<reason>" (terminated reason, else
//     Signal:N or ExitCode:N; a waiting reason other than PodInitializing)
//     or "Init:i/n".
//   - Once initialized, main containers are walked last to first, so the
//     first container's state wins: a waiting reason (ContainerCreating,
//     CrashLoopBackOff), a terminated reason (Completed, Error, OOMKilled,
//     else Signal:N / ExitCode:N); running and ready ones count in READY.
//     "Completed" turns back into Running (another container runs and the
//     pod is Ready), the failing container's reason, or NotReady.
//   - A deletion timestamp shows Terminating unless the pod already
//     Succeeded or Failed (Unknown for a lost node).
//   - READY's total counts native sidecars; RESTARTS counts main containers
//     and sidecars (all init containers while initializing), with the time
//     since the latest restart.
func summarizePod(p *corev1.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.status = p.Status.Reason
	}
	if c := podCondition(p, corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonSchedulingGated {
		s.status = corev1.PodReasonSchedulingGated
	}
	sidecar := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			s.total++
		}
	}

	var sidecarRestarts int
	var lastSidecarRestart time.Time
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
		if sidecar[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			lastSidecarRestart = later(lastSidecarRestart, cs.LastTerminationState)
		}
		term, wait := cs.State.Terminated, cs.State.Waiting
		if term != nil && term.ExitCode == 0 {
			continue
		}
		if sidecar[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				s.ready++
			}
			continue
		}
		initializing = true
		switch {
		case term != nil:
			s.status = "Init:" + terminatedReason(term)
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			s.status = "Init:" + wait.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		break
	}

	if !initializing || podConditionTrue(p, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, lastSidecarRestart
		running, failure := false, ""
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			s.restarts += int(cs.RestartCount)
			s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				s.status = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				s.status = terminatedReason(cs.State.Terminated)
				if cs.State.Terminated.ExitCode != 0 {
					failure = s.status
				}
			case cs.Ready && cs.State.Running != nil:
				running = true
				s.ready++
			}
		}
		if s.status == "Completed" {
			switch {
			case running && podConditionTrue(p, corev1.PodReady):
				s.status = "Running"
			case failure != "":
				s.status = failure
			case running:
				s.status = "NotReady"
			}
		}
	}

	if p.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == "NodeLost":
			s.status = "Unknown"
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func later(t time.Time, last corev1.ContainerState) time.Time {
	if last.Terminated != nil && last.Terminated.FinishedAt.Time.After(t) {
		return last.Terminated.FinishedAt.Time
	}
	return t
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	c := podCondition(p, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// eventRow is `kubectl events`' row: LAST SEEN folds repeats as
// "2m (x3 over 5m)", OBJECT is Kind/name. Wide adds `kubectl get events -o
// wide`'s columns, with the count in its own column.
func eventRow(e *corev1.Event, wide bool, now time.Time) []string {
	object := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
	msg := strings.TrimSpace(e.Message)
	first := age(e.FirstTimestamp, now)
	if !e.EventTime.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last, count := first, e.Count
	switch {
	case e.Series != nil:
		last, count = microAge(e.Series.LastObservedTime, now), e.Series.Count
	case !e.LastTimestamp.IsZero():
		last = age(e.LastTimestamp, now)
	}
	if !wide {
		seen := first
		if count > 1 {
			seen = fmt.Sprintf("%s (x%d over %s)", last, count, first)
		}
		return []string{seen, e.Type, e.Reason, object, msg}
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	if e.Source.Host != "" {
		source += ", " + e.Source.Host
	}
	return []string{last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath, source, msg, first, strconv.Itoa(int(max(count, 1))), e.Name}
}

// sortEvents orders events by when they were last seen, oldest first, as
// `kubectl events` does.
func sortEvents(events []corev1.Event) {
	slices.SortStableFunc(events, func(a, b corev1.Event) int {
		return eventTime(a).Compare(eventTime(b))
	})
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// endpointSliceRow is kubectl's: up to three ports and three addresses,
// then "+ N more...", and "<unset>" for none.
func endpointSliceRow(s *discoveryv1.EndpointSlice, _ bool, now time.Time) []string {
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

// serviceRow is `kubectl get ksvc`: Knative's printer columns, empty cells
// for fields not set yet.
func serviceRow(s *objstore.KnativeService, _ bool, _ time.Time) []string {
	ready, reason := "", ""
	if c := s.Status.Condition("Ready"); c != nil {
		ready, reason = string(c.Status), c.Reason
	}
	return []string{s.Name, s.Status.URL, s.Status.LatestCreatedRevisionName, s.Status.LatestReadyRevisionName, ready, reason}
}

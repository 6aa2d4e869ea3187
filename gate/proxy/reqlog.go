package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
)

// RequestLog writes one line per request. Without a template, or with
// Knative's default one, a line is the JSON that template means to make
// (Cloud Logging's httpRequest entry), written directly: so log pipelines
// built for queue-proxy read it unchanged, and it costs a fraction of
// running the template. Any other template runs as Knative runs it, with
// the same input (RequestLogInput), so a custom template written for
// queue-proxy gives the same lines.
type RequestLog struct {
	mu     sync.Mutex
	w      io.Writer
	rev    RequestLogRevision
	tmpl   *template.Template // nil: the JSON line
	probes bool
	bufs   sync.Pool
}

// RequestLogOptions shape a RequestLog.
type RequestLogOptions struct {
	// Template is Knative's request log template (config-observability's
	// logging.request-log-template); "" or DefaultTemplate write the JSON
	// line directly.
	Template, DefaultTemplate string
	// Revision is what a template sees as .Revision.
	Revision RequestLogRevision
	// Probes: log health checks and probes too (Knative's
	// logging.enable-probe-request-log); by default they are not logged.
	Probes bool
}

// RequestLogRevision is a template's .Revision: the pod's identity.
type RequestLogRevision struct {
	Name, Namespace, Service, Configuration, PodName, PodIP string
}

// RequestLogResponse is a template's .Response. Latency is in seconds.
type RequestLogResponse struct {
	Code    int
	Size    int
	Latency float64
}

// RequestLogInput is what a template is run with, field for field what
// Knative's request log runs it with.
type RequestLogInput struct {
	Request  *http.Request
	Response *RequestLogResponse
	Revision *RequestLogRevision
	TraceID  string
}

type httpRequestEntry struct {
	RequestMethod string `json:"requestMethod"`
	RequestURL    string `json:"requestUrl"`
	RequestSize   string `json:"requestSize"`
	Status        int    `json:"status"`
	ResponseSize  string `json:"responseSize"`
	UserAgent     string `json:"userAgent"`
	RemoteIP      string `json:"remoteIp"`
	ServerIP      string `json:"serverIp"`
	Referer       string `json:"referer"`
	Latency       string `json:"latency"`
	Protocol      string `json:"protocol"`
}

type requestLogLine struct {
	HTTPRequest httpRequestEntry `json:"httpRequest"`
	TraceID     string           `json:"traceId"`
}

// NewRequestLog writes to w. A template that does not parse is an error.
func NewRequestLog(w io.Writer, opts RequestLogOptions) (*RequestLog, error) {
	l := &RequestLog{w: w, rev: opts.Revision, probes: opts.Probes}
	l.bufs.New = func() any { return new(bytes.Buffer) }
	if t := opts.Template; t != "" && t != opts.DefaultTemplate {
		if !strings.HasSuffix(t, "\n") {
			t += "\n"
		}
		tmpl, err := template.New("requestLog").Parse(t)
		if err != nil {
			return nil, fmt.Errorf("request log template: %w", err)
		}
		l.tmpl = tmpl
	}
	return l, nil
}

// Log writes r's line: its answer's status and body size, and how long it
// took. probe says r is a health check or a probe: logged only when the
// options ask for it. It is safe for concurrent use.
func (l *RequestLog) Log(r *http.Request, status int, size int64, latency time.Duration, probe bool) {
	if probe && !l.probes {
		return
	}
	buf := l.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer l.bufs.Put(buf)
	if l.tmpl != nil {
		in := &RequestLogInput{
			Request:  r,
			Response: &RequestLogResponse{Code: status, Size: int(size), Latency: latency.Seconds()},
			Revision: &l.rev,
			TraceID:  TraceID(r.Header),
		}
		if err := l.tmpl.Execute(buf, in); err != nil {
			buf.Reset()
			// Knative's words, so that whoever searches for them finds them.
			fmt.Fprintf(buf, "Invalid request log template: method: %v, response code: %v, latency: %v, url: %v\n",
				r.Method, status, latency.Seconds(), r.URL)
		}
	} else {
		line := requestLogLine{
			HTTPRequest: httpRequestEntry{
				RequestMethod: r.Method,
				RequestURL:    r.RequestURI,
				RequestSize:   strconv.FormatInt(max(r.ContentLength, 0), 10),
				Status:        status,
				ResponseSize:  strconv.FormatInt(size, 10),
				UserAgent:     r.UserAgent(),
				RemoteIP:      r.RemoteAddr,
				ServerIP:      l.rev.PodIP,
				Referer:       r.Referer(),
				Latency:       strconv.FormatFloat(latency.Seconds(), 'f', 9, 64) + "s",
				Protocol:      r.Proto,
			},
			TraceID: TraceID(r.Header),
		}
		if err := json.NewEncoder(buf).Encode(line); err != nil {
			return
		}
	}
	l.mu.Lock()
	_, _ = l.w.Write(buf.Bytes())
	l.mu.Unlock()
}

// TraceID is the request's trace: the trace-id of a W3C traceparent
// header, else B3's X-B3-TraceId, else "" — the order Knative reads them
// in.
func TraceID(h http.Header) string {
	if tp := h.Get("Traceparent"); tp != "" {
		if parts := strings.SplitN(tp, "-", 3); len(parts) >= 2 {
			return parts[1]
		}
	}
	return h.Get("X-B3-Traceid")
}

package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RequestLog writes one JSON line per request, in the shape of Knative's
// default request log template (Cloud Logging's httpRequest), so log
// pipelines built for queue-proxy read it unchanged.
type RequestLog struct {
	mu       sync.Mutex
	w        io.Writer
	serverIP string
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

// NewRequestLog writes to w; serverIP is the pod's IP.
func NewRequestLog(w io.Writer, serverIP string) *RequestLog {
	return &RequestLog{w: w, serverIP: serverIP}
}

// Log writes r's line: its answer's status and body size, and how long it
// took. It is safe for concurrent use.
func (l *RequestLog) Log(r *http.Request, status int, size int64, latency time.Duration) {
	line := requestLogLine{
		HTTPRequest: httpRequestEntry{
			RequestMethod: r.Method,
			RequestURL:    r.RequestURI,
			RequestSize:   strconv.FormatInt(max(r.ContentLength, 0), 10),
			Status:        status,
			ResponseSize:  strconv.FormatInt(size, 10),
			UserAgent:     r.UserAgent(),
			RemoteIP:      r.RemoteAddr,
			ServerIP:      l.serverIP,
			Referer:       r.Referer(),
			Latency:       strconv.FormatFloat(latency.Seconds(), 'f', 9, 64) + "s",
			Protocol:      r.Proto,
		},
		TraceID: r.Header.Get("X-B3-Traceid"),
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	_, _ = l.w.Write(b)
	l.mu.Unlock()
}

package proxy

import (
	"bufio"
	"net"
	"net/http"
)

// Recorder notes the status and size of a response on its way out, for
// metrics, the request log and the timeout (which may answer only while
// nothing was written). Flush, Hijack and the rest of
// http.ResponseController reach the server's writer through Unwrap.
// Make one with &Recorder{ResponseWriter: w}.
type Recorder struct {
	http.ResponseWriter
	status int // first final status written; 0 before
	bytes  int64
	st     *reqState // the request's limits; nil without any
}

func (w *Recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	if w.st != nil {
		if code < 200 {
			// An informational answer (103 Early Hints) starts the
			// response for the response-start limit, as for queue-proxy,
			// whose limits count every write.
			w.st.responseStarted()
		}
		w.st.wrote()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	if w.st != nil {
		w.st.wrote()
	}
	return n, err
}

func (w *Recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection to an upgraded protocol (websockets): the
// proxy writes the 101 on it itself.
func (w *Recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	if err == nil && w.st != nil {
		conn = w.st.hijacked(conn)
	}
	return conn, brw, err
}

func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Bytes is how much of the body was written.
func (w *Recorder) Bytes() int64 { return w.bytes }

// ClientLeft records that the client went away before the answer (nginx's
// 499); nothing is written.
func (w *Recorder) ClientLeft() { w.status = statusClientClosed }

// Code is the status to record: 200 for a handler that wrote nothing.
func (w *Recorder) Code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

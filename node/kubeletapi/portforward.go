package kubeletapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/streaming/pkg/httpstream"
)

// portForward is /portForward/{ns}/{pod}: the SPDY upgrade, then for
// every pair of streams the client opens (one data, one error, the same
// requestID and port headers) a connection to that port inside the pod,
// copied both ways; a failure is written on the pair's error stream.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	conn, _, streams := upgrade(w, r, []string{portforward.PortForwardV1Name})
	if conn == nil {
		return
	}
	defer conn.Close()
	ctx, cancel := contextUntilClosed(r.Context(), conn)
	defer cancel()
	ns, pod := r.PathValue("ns"), r.PathValue("pod")
	pairs := map[string]*streamPair{}
	var forwards sync.WaitGroup
	defer forwards.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-streams:
			id := st.stream.Headers().Get(corev1.PortForwardRequestIDHeader)
			p := pairs[id]
			if p == nil {
				p = &streamPair{created: time.Now()}
				pairs[id] = p
			}
			if !p.add(st) {
				st.stream.Reset()
				continue
			}
			if p.complete() {
				delete(pairs, id)
				forwards.Add(1)
				go func() {
					defer forwards.Done()
					s.forward(ctx, conn, ns, pod, p)
				}()
			}
		}
	}
}

// streamPair is a forward's data and error streams.
type streamPair struct {
	created     time.Time
	data, errSt *newStream
}

// add takes a stream of the pair; false for a type it has or does not know.
func (p *streamPair) add(st newStream) bool {
	switch st.stream.Headers().Get(corev1.StreamType) {
	case corev1.StreamTypeData:
		if p.data == nil {
			p.data = &st
			return true
		}
	case corev1.StreamTypeError:
		if p.errSt == nil {
			p.errSt = &st
			return true
		}
	}
	return false
}

func (p *streamPair) complete() bool { return p.data != nil && p.errSt != nil }

// forward connects the pair's data stream to its port in the pod until
// either side ends.
func (s *Server) forward(ctx context.Context, conn httpstream.Connection, ns, pod string, p *streamPair) {
	<-p.data.replySent
	<-p.errSt.replySent
	defer conn.RemoveStreams(p.data.stream, p.errSt.stream)
	defer p.data.stream.Close()
	defer p.errSt.stream.Close()
	portStr := p.data.stream.Headers().Get(corev1.PortHeader)
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		fmt.Fprintf(p.errSt.stream, "invalid port %q", portStr)
		return
	}
	c, err := s.cfg.Pods.DialPort(ctx, ns, pod, uint16(port))
	if err != nil {
		fmt.Fprintf(p.errSt.stream, "error forwarding port %d to pod %s/%s: %v", port, ns, pod, err)
		return
	}
	defer c.Close()
	toPod := make(chan struct{})
	go func() {
		defer close(toPod)
		_, _ = io.Copy(c, p.data.stream)
		// The client is done sending: the pod's program sees its end of
		// input and may still answer.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, _ = io.Copy(p.data.stream, c)
	// The pod's side ended: everything it sent is on the stream. Closing
	// the pair ends the client's forward of this connection, which then
	// closes its side of the data stream: that ends the copy towards the
	// pod (the connection being gone, so could the client's whole
	// session).
	_ = c.Close()
	_ = p.data.stream.Close()
	_ = p.errSt.stream.Close()
	select {
	case <-toPod:
	case <-ctx.Done():
	}
}

// contextUntilClosed is parent, ended also when the upgraded connection
// closes: a hijacked request's context does not notice.
func contextUntilClosed(parent context.Context, conn httpstream.Connection) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

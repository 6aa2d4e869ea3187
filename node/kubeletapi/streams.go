package kubeletapi

import (
	"errors"
	"net/http"
	"time"

	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// Timeouts of the streaming sessions, the kubelet's defaults.
const (
	// streamCreationTimeout bounds the wait for the client's streams
	// after the upgrade.
	streamCreationTimeout = 30 * time.Second
	// streamIdleTimeout closes a session with no traffic for that long
	// (the kubelet's --streaming-connection-idle-timeout).
	streamIdleTimeout = 4 * time.Hour
)

// newStream is a stream the client opened, and when the server's reply
// to it was sent (writing before is not allowed).
type newStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// upgrade negotiates one of protocols and upgrades the request to a SPDY
// connection whose new streams arrive on the channel. Nil on failure:
// the answer (400, 403) was written.
func upgrade(w http.ResponseWriter, r *http.Request, protocols []string) (httpstream.Connection, string, <-chan newStream) {
	protocol, err := httpstream.Handshake(r, w, protocols)
	if err != nil {
		return nil, "", nil
	}
	streams := make(chan newStream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, replySent <-chan struct{}) error {
		// Refused when nobody takes it (a client opening more streams
		// than the session uses), rather than holding the connection's
		// reader for ever.
		t := time.NewTimer(streamCreationTimeout)
		defer t.Stop()
		select {
		case streams <- newStream{s, replySent}:
			return nil
		case <-t.C:
			return errors.New("stream not accepted: the session takes no more")
		}
	})
	if conn == nil {
		return nil, "", nil
	}
	conn.SetIdleTimeout(streamIdleTimeout)
	return conn, protocol, streams
}

// errStreamTimeout: the client did not open its streams in time.
var errStreamTimeout = errors.New("timed out waiting for the client to create streams")

package kubeletapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// execProtocols are the remotecommand versions served over SPDY, newest
// first: v4 reports the exit status on the error stream, v3 adds the
// resize stream, v2 is the first without the original's bugs. (v5 is the
// WebSocket protocol the API server speaks with kubectl.)
var execProtocols = []string{remotecommand.StreamProtocolV4Name, remotecommand.StreamProtocolV3Name, remotecommand.StreamProtocolV2Name}

// execOptions are an exec request's query as the API server writes it:
// command (repeated), input, output, error, tty (corev1's Exec*Param
// names, "1" for true).
type execOptions struct {
	command                   []string
	stdin, stdout, stderr, tt bool
}

func parseExecOptions(r *http.Request) (execOptions, error) {
	q := r.URL.Query()
	o := execOptions{command: q[corev1.ExecCommandParam]}
	for _, b := range []struct {
		name string
		into *bool
	}{{corev1.ExecStdinParam, &o.stdin}, {corev1.ExecStdoutParam, &o.stdout}, {corev1.ExecStderrParam, &o.stderr}, {corev1.ExecTTYParam, &o.tt}} {
		if s := q.Get(b.name); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return o, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want true or false", b.name, s))
			}
			*b.into = v
		}
	}
	switch {
	case len(o.command) == 0:
		return o, apierrors.NewBadRequest("command: required")
	case !o.stdin && !o.stdout && !o.stderr:
		return o, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	case o.tt && o.stderr:
		// A terminal has one output.
		return o, apierrors.NewBadRequest("tty and stderr cannot both be true")
	}
	return o, nil
}

// execSession are the streams of one exec, by type.
type execSession struct {
	protocol                      string
	errStream, stdin, stdout, err httpstream.Stream
	resize                        httpstream.Stream
}

// exec is /exec/{ns}/{pod}/{container}: the SPDY upgrade, the client's
// streams, the command run by the node agent, and its end reported on
// the error stream.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := parseExecOptions(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	conn, protocol, streams := upgrade(w, r, execProtocols)
	if conn == nil {
		return
	}
	defer conn.Close()
	sess, err := waitExecStreams(streams, opts, protocol)
	if err != nil {
		s.log.Info("kubelet API: exec", "err", err)
		return
	}
	// The hijacked request's context does not end with the connection.
	ctx, cancel := contextUntilClosed(r.Context(), conn)
	defer cancel()
	exio := ExecIO{TTY: opts.tt}
	if sess.stdin != nil {
		exio.Stdin = sess.stdin
	}
	if sess.stdout != nil {
		exio.Stdout = sess.stdout
	}
	if sess.err != nil {
		exio.Stderr = sess.err
	}
	if sess.resize != nil {
		resize := make(chan TerminalSize, 1)
		go decodeResize(sess.resize, resize, ctx.Done())
		exio.Resize = resize
	}
	code, err := s.cfg.Pods.Exec(ctx, r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), opts.command, exio)
	sess.report(code, err)
	for _, st := range []httpstream.Stream{sess.stdout, sess.err, sess.errStream} {
		if st != nil {
			st.Close()
		}
	}
}

// waitExecStreams collects the streams opts calls for — error always,
// stdin, stdout, stderr as asked, resize with a terminal from v3 — until
// all are there and replied to.
func waitExecStreams(streams <-chan newStream, opts execOptions, protocol string) (*execSession, error) {
	want := 1
	for _, b := range []bool{opts.stdin, opts.stdout, opts.stderr && !opts.tt, opts.tt && protocol != remotecommand.StreamProtocolV2Name} {
		if b {
			want++
		}
	}
	sess := &execSession{protocol: protocol}
	timeout := time.NewTimer(streamCreationTimeout)
	defer timeout.Stop()
	var replies []<-chan struct{}
	for got := 0; got < want; {
		select {
		case ns := <-streams:
			switch ns.stream.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				sess.errStream = ns.stream
			case corev1.StreamTypeStdin:
				sess.stdin = ns.stream
			case corev1.StreamTypeStdout:
				sess.stdout = ns.stream
			case corev1.StreamTypeStderr:
				sess.err = ns.stream
			case corev1.StreamTypeResize:
				sess.resize = ns.stream
			default:
				return nil, fmt.Errorf("unexpected stream type %q", ns.stream.Headers().Get(corev1.StreamType))
			}
			replies = append(replies, ns.replySent)
			got++
		case <-timeout.C:
			return nil, errStreamTimeout
		}
	}
	for _, rs := range replies {
		<-rs
	}
	return sess, nil
}

// report writes how the command ended on the error stream: from v4 a
// Status — Success, or Failure with reason NonZeroExitCode and the code
// as an ExitCode cause (which kubectl exits with), or the error's
// message; before v4 only an error, as text.
func (sess *execSession) report(code int, err error) {
	if sess.errStream == nil {
		return
	}
	if err == nil && code != 0 {
		err = fmt.Errorf("command terminated with non-zero exit code: %d", code)
	}
	if sess.protocol != remotecommand.StreamProtocolV4Name {
		if err != nil {
			_, _ = io.WriteString(sess.errStream, err.Error())
		}
		return
	}
	st := metav1.Status{Status: metav1.StatusSuccess}
	switch {
	case err == nil:
	case code > 0:
		st = metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason, Message: err.Error(),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(code)}}}}
	default:
		var as apierrors.APIStatus
		if errors.As(err, &as) {
			st = as.Status()
		} else {
			st = apierrors.NewInternalError(err).Status()
		}
	}
	b, _ := json.Marshal(st)
	_, _ = sess.errStream.Write(b)
}

// decodeResize reads the resize stream's sizes into ch until it ends,
// or until done (no one reads ch any more).
func decodeResize(r io.Reader, ch chan<- TerminalSize, done <-chan struct{}) {
	defer close(ch)
	dec := json.NewDecoder(r)
	for {
		var sz TerminalSize
		if err := dec.Decode(&sz); err != nil {
			return
		}
		select {
		case ch <- sz:
		case <-done:
			return
		}
	}
}

package proxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestReplayBody(t *testing.T) {
	t.Run("a body read partly starts over after a rewind", func(t *testing.T) {
		b := newReplayBody(io.NopCloser(strings.NewReader("hello world")))
		head := make([]byte, 5)
		io.ReadFull(b, head)
		if !b.touched() {
			t.Fatal("not touched after a read")
		}
		rc, err := b.rewind()
		if err != nil {
			t.Fatal(err)
		}
		all, _ := io.ReadAll(rc)
		if string(all) != "hello world" {
			t.Errorf("after rewind: %q", all)
		}
	})
	t.Run("a body beyond the limit cannot be replayed", func(t *testing.T) {
		b := newReplayBody(io.NopCloser(strings.NewReader(strings.Repeat("x", replayLimit+1))))
		io.Copy(io.Discard, b)
		if _, err := b.rewind(); err != errCannotReplay {
			t.Errorf("rewind: %v, want errCannotReplay", err)
		}
	})
	t.Run("Close leaves the inbound body open", func(t *testing.T) {
		pr, pw := io.Pipe()
		b := newReplayBody(pr)
		b.Close()
		go pw.Write([]byte("x"))
		buf := make([]byte, 1)
		if _, err := b.Read(buf); err != nil {
			t.Errorf("read after Close: %v", err)
		}
		pw.Close()
	})
}

func TestNeverSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, dialErr := (&http.Transport{}).RoundTrip(mustRequest(t, "http://"+addr+"/"))
	if !neverSent(dialErr) {
		t.Errorf("a refused connection (%v) counts as sent", dialErr)
	}
	if neverSent(io.ErrUnexpectedEOF) {
		t.Error("an EOF after sending counts as never sent")
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

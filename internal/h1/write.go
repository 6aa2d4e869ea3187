package h1

import (
	"bufio"
	"net/http"
	"net/textproto"
	"strings"
)

// reqWriteExclude are the headers Request.Write writes apart from the
// rest, or not at all.
var reqWriteExclude = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeRequest writes a bodiless request as Request.Write does, without
// its formatting and per-request allocations: the request line, Host,
// User-Agent, Content-Length: 0 for POST, PUT and PATCH, the other
// headers sorted. A host or URI that needs Request.Write's
// rules (Punycode, a zone, control characters) goes to Request.Write.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	ruri := req.URL.RequestURI()
	if !plainHost(host) || !plainURI(ruri) || req.Method == "" {
		return req.Write(bw)
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua := "Go-http-client/1.1" // net/http's default, unless the header is there
	if _, ok := req.Header["User-Agent"]; ok {
		ua = req.Header.Get("User-Agent")
	}
	// Request.Write skips only an empty value; one of blanks is trimmed
	// after that check and sent empty.
	if ua != "" {
		bw.WriteString("User-Agent: ")
		bw.WriteString(textproto.TrimString(uaNewlines.Replace(ua)))
		bw.WriteString("\r\n")
	}
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n") // "many servers expect" one, says net/http
	}
	if err := req.Header.WriteSubset(bw, reqWriteExclude); err != nil {
		return err
	}
	_, err := bw.WriteString("\r\n")
	return err
}

var uaNewlines = strings.NewReplacer("\n", " ", "\r", " ")

// plainHost: only letters, digits and . - _ : [ ] (a name, an IPv4 or a
// bracketed IPv6 address without zone, a port), which Request.Write sends
// unchanged.
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// plainURI: no control characters or spaces and no bytes beyond ASCII.
func plainURI(u string) bool {
	for i := 0; i < len(u); i++ {
		if u[i] <= ' ' || u[i] >= 0x7f {
			return false
		}
	}
	return true
}

package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/stewardhq/steward/sdk/protocol"
)

// bodyBuffers hold the bodies a response holds back.
var bodyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

// headBuffers hold the heads being written.
var headBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errTooLong is a handler writing more than the Content-Length it set.
var errTooLong = errors.New("dataplane: body longer than its declared Content-Length")

// response is the handler's http.ResponseWriter.
type response struct {
	c      *conn
	req    *http.Request
	header http.Header
	// status and head are set at WriteHeader or the first Write: the head
	// as it stood then is the head sent.
	status int
	head   http.Header
	buf    *[]byte
	// streaming: the head has gone out; writes go to the connection.
	streaming bool
	chunks    io.WriteCloser
	declared  int64 // the handler's Content-Length, or -1
	written   int64
	err       error
	// closeAfter: the connection cannot carry another request.
	closeAfter bool
	// body is the request body, nil without one; bodyLeft: more of it
	// than maxDrain was left unread, so the connection closes after the
	// answer.
	body     *bodyReader
	bodyLeft bool
}

func newResponse(c *conn, req *http.Request) *response {
	return &response{c: c, req: req, header: http.Header{}, buf: bodyBuffers.Get().(*[]byte), declared: -1}
}

func (w *response) release() {
	*w.buf = (*w.buf)[:0]
	bodyBuffers.Put(w.buf)
	w.buf = nil
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	switch {
	case w.status != 0:
	case code < 100 || code > 999:
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	case code < 200 && code != http.StatusSwitchingProtocols:
		// An informational head goes out at once.
		w.writeHead(code, w.header, false)
		w.err = w.c.bw.Flush()
	default:
		w.setStatus(code)
	}
}

func (w *response) setStatus(code int) {
	w.status = code
	w.head = w.header.Clone()
	if n, err := strconv.ParseInt(w.head.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		w.declared = n
	} else {
		delete(w.head, "Content-Length")
	}
	if strings.EqualFold(w.head.Get("Connection"), "close") {
		w.closeAfter = true
	}
	if w.head["Trailer"] != nil {
		_ = w.stream()
	}
}

func (w *response) bodyAllowed() bool {
	return w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.setStatus(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, errTooLong
	}
	w.written += int64(len(p))
	if !w.streaming {
		if len(*w.buf)+len(p) <= protocol.InlineBody {
			*w.buf = append(*w.buf, p...)
			return len(p), nil
		}
		if err := w.stream(); err != nil {
			return 0, err
		}
	}
	return w.send(p)
}

// send writes body bytes on the streaming connection.
func (w *response) send(p []byte) (int, error) {
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	var n int
	if w.chunks != nil {
		n, w.err = w.chunks.Write(p)
	} else {
		n, w.err = w.c.bw.Write(p)
	}
	return n, w.err
}

// Flush sends the head and what is held back, and streams from then on.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a failed write, as http.ResponseController
// asks.
func (w *response) FlushError() error {
	if w.status == 0 {
		w.setStatus(http.StatusOK)
	}
	if err := w.stream(); err != nil {
		return err
	}
	if w.err == nil {
		w.err = w.c.bw.Flush()
	}
	return w.err
}

// stream sends the head, in chunks unless the handler declared the
// length, and the body held back so far.
func (w *response) stream() error {
	if w.streaming {
		return w.err
	}
	w.streaming = true
	if len(*w.buf) > 0 && w.head["Content-Type"] == nil {
		w.head.Set("Content-Type", http.DetectContentType(*w.buf))
	}
	chunked := w.bodyAllowed() && w.declared < 0 && w.req.Method != http.MethodHead
	if chunked {
		w.head.Del("Content-Length")
		w.head.Set("Transfer-Encoding", "chunked")
	}
	w.writeHead(w.status, w.head, w.closeAfter)
	if chunked {
		w.chunks = httputil.NewChunkedWriter(w.c.bw)
	}
	if len(*w.buf) > 0 && w.err == nil {
		_, _ = w.send(*w.buf)
	}
	return w.err
}

// finish completes the response once the handler has returned.
func (w *response) finish() error {
	if w.status == 0 {
		w.setStatus(http.StatusOK)
	}
	if !w.streaming && hasPrefixedTrailer(w.header) {
		_ = w.stream()
	}
	if !w.streaming {
		return w.sendWhole()
	}
	if w.err != nil {
		return w.err
	}
	switch {
	case w.chunks != nil:
		if w.err = w.chunks.Close(); w.err != nil {
			return w.err
		}
		w.writeTrailers()
	case w.declared >= 0 && w.written < w.declared && w.req.Method != http.MethodHead:
		// A body shorter than declared: the host must not wait for the
		// rest on this connection.
		w.closeAfter = true
	}
	if w.err == nil {
		w.err = w.c.bw.Flush()
	}
	return w.err
}

// sendWhole writes the head and the whole body in one system call.
func (w *response) sendWhole() error {
	body := *w.buf
	if w.bodyAllowed() && w.declared < 0 {
		w.head.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if w.declared >= 0 && int64(len(body)) < w.declared && w.req.Method != http.MethodHead {
		w.closeAfter = true
	}
	if len(body) > 0 && w.head["Content-Type"] == nil {
		w.head.Set("Content-Type", http.DetectContentType(body))
	}
	// The handler is done: what it left of the request body is read
	// past now, so the head can say whether the connection stays.
	if !drain(w.body) {
		w.bodyLeft, w.closeAfter = true, true
	}
	head := headBuffers.Get().(*bytes.Buffer)
	defer func() {
		head.Reset()
		headBuffers.Put(head)
	}()
	writeHead(head, w.status, w.head, w.closeAfter || w.req.Close)
	bufs := net.Buffers{head.Bytes()}
	if len(body) > 0 && w.req.Method != http.MethodHead {
		bufs = append(bufs, body)
	}
	_, w.err = bufs.WriteTo(w.c.rwc)
	return w.err
}

// writeHead writes a head on the buffered connection.
func (w *response) writeHead(status int, h http.Header, closing bool) {
	if w.err != nil {
		return
	}
	head := headBuffers.Get().(*bytes.Buffer)
	writeHead(head, status, h, closing || w.req.Close)
	_, w.err = w.c.bw.Write(head.Bytes())
	head.Reset()
	headBuffers.Put(head)
}

// writeTrailers writes the declared and prefixed trailers and ends the
// chunked body.
func (w *response) writeTrailers() {
	t := http.Header{}
	for _, v := range w.head["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			if vv, ok := w.header[k]; ok {
				t[k] = vv
			}
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			t[http.CanonicalHeaderKey(name)] = vv
		}
	}
	buf := headBuffers.Get().(*bytes.Buffer)
	writeFields(buf, t)
	buf.WriteString("\r\n")
	_, w.err = w.c.bw.Write(buf.Bytes())
	buf.Reset()
	headBuffers.Put(buf)
}

func hasPrefixedTrailer(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// writeHead writes a status line and its fields.
func writeHead(b *bytes.Buffer, status int, h http.Header, closing bool) {
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(status))
	b.WriteByte(' ')
	text := http.StatusText(status)
	if text == "" {
		text = "status code " + strconv.Itoa(status)
	}
	b.WriteString(text)
	b.WriteString("\r\n")
	writeFields(b, h)
	if closing {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
}

// writeFields writes header fields in a stable order, leaving out names
// that are not valid field names or that are trailers-to-be, and values
// with line breaks replaced, as net/http does.
func writeFields(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		if httpguts.ValidHeaderFieldName(k) && k != "Connection" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(fieldValue.Replace(strings.TrimSpace(v)))
			b.WriteString("\r\n")
		}
	}
}

var fieldValue = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

package sdk

import (
	"bytes"
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// HandleHTTP serves one request that arrives over the gRPC stream.
func (s *server) HandleHTTP(stream pluginv1.Plugin_HandleHTTPServer) error {
	handler, err := s.currentHandler()
	if err != nil {
		return err
	}
	return serveHTTPStream(stream, handler)
}

// httpStream is one side of the HandleHTTP stream as the plugin sees it.
type httpStream interface {
	Context() context.Context
	Recv() (*pluginv1.HTTPRequestPart, error)
	Send(*pluginv1.HTTPResponsePart) error
}

// serveHTTPStream adapts the HandleHTTP stream to a net/http handler.
func serveHTTPStream(stream httpStream, handler http.Handler) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	head := first.GetHead()
	if head == nil {
		return status.Error(codes.InvalidArgument, "first message must be the request head")
	}
	body := &streamBody{stream: stream}
	u := &url.URL{Path: head.Path, RawQuery: head.RawQuery}
	req, err := http.NewRequestWithContext(stream.Context(), head.Method, u.RequestURI(), body)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "request: %v", err)
	}
	for k, v := range head.Headers {
		req.Header[k] = v.Values
	}
	// The host forwards the caller's Content-Length as a header; handlers
	// read the field, which net/http sets on the data socket.
	if n, err := strconv.ParseInt(req.Header.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		req.ContentLength = n
	}
	req.RemoteAddr = head.RemoteAddr
	req.Host = req.Header.Get("Host")
	for k, v := range head.PathParams {
		req.SetPathValue(k, v)
	}
	req = req.WithContext(WithRequestInfo(req.Context(), RequestInfo{
		Principal: principalFromProto(head.Principal),
		RequestID: head.RequestId,
		Route:     head.Route,
	}))
	w := &streamWriter{stream: stream, header: http.Header{}}
	handler.ServeHTTP(w, req)
	return w.finish()
}

type streamBody struct {
	stream httpStream
	buf    []byte
	eof    bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.eof {
			return 0, io.EOF
		}
		part, err := b.stream.Recv()
		if err == io.EOF {
			b.eof = true
			continue
		}
		if err != nil {
			return 0, err
		}
		b.buf = part.GetBody()
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *streamBody) Close() error { return nil }

type streamWriter struct {
	stream      httpStream
	header      http.Header
	wroteHeader bool
	buf         bytes.Buffer
	err         error
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	headers := make(map[string]*pluginv1.HeaderValues, len(w.header))
	for k, v := range w.header {
		headers[k] = &pluginv1.HeaderValues{Values: v}
	}
	w.err = w.stream.Send(&pluginv1.HTTPResponsePart{Part: &pluginv1.HTTPResponsePart_Head{
		Head: &pluginv1.HTTPResponseHead{Status: int32(code), Headers: headers},
	}})
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	for len(p) > 0 {
		room := protocol.ChunkSize - w.buf.Len()
		take := min(room, len(p))
		w.buf.Write(p[:take])
		p = p[take:]
		if w.buf.Len() >= protocol.ChunkSize {
			w.Flush()
			if w.err != nil {
				return 0, w.err
			}
		}
	}
	return n, nil
}

// Flush sends what is buffered, so a handler streaming a long response can
// push it out early.
func (w *streamWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.buf.Len() == 0 || w.err != nil {
		return
	}
	b := bytes.Clone(w.buf.Bytes())
	w.buf.Reset()
	w.err = w.stream.Send(&pluginv1.HTTPResponsePart{Part: &pluginv1.HTTPResponsePart_Body{Body: b}})
}

func (w *streamWriter) finish() error {
	w.Flush()
	return w.err
}

// socketHandler serves the direct data plane: only the host, which knows the
// token, may call it, and the principal comes from the host's header.
func socketHandler(token string, next http.Handler, logger hclog.Logger) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(protocol.HeaderToken)), want) != 1 {
			WriteError(w, &Problem{Title: "Unauthorized", Status: http.StatusUnauthorized, Detail: "missing or wrong plugin token"})
			return
		}
		info := RequestInfo{RequestID: r.Header.Get(protocol.HeaderRequestID), Route: r.Header.Get(protocol.HeaderRoute)}
		if raw := r.Header.Get(protocol.HeaderPrincipal); raw != "" {
			p, err := protocol.DecodePrincipal(raw)
			if err != nil {
				logger.Error("bad principal header from host", "error", err)
				WriteError(w, BadRequest("bad principal header"))
				return
			}
			info.Principal = principalFromProto(p)
		}
		r.Header.Del(protocol.HeaderToken)
		r.Header.Del(protocol.HeaderPrincipal)
		r.Header.Del(protocol.HeaderRoute)
		if r.Method == http.MethodHead {
			next.ServeHTTP(w, r.WithContext(WithRequestInfo(r.Context(), info)))
			return
		}
		bw := &wholeBodyWriter{w: w, buf: bodyBuffers.Get().(*[]byte)}
		defer bw.release()
		next.ServeHTTP(bw, r.WithContext(WithRequestInfo(r.Context(), info)))
		bw.finish()
	})
}

// bodyBuffers hold the bodies wholeBodyWriter holds back.
var bodyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

// wholeBodyWriter holds back a response body of up to protocol.InlineBody
// bytes and sends it, once the handler returns, with its Content-Length in
// one write. net/http alone sends any body longer than its 2 KiB buffer in
// chunks, written to the socket as the handler writes: more system calls
// on both sides, and a body the host must stream on to its caller instead
// of relaying it whole. A longer body, or one the handler flushes, streams
// as before from that point. What the caller gets is what net/http would
// have sent, but for the length: the head as it stood when the status was
// set, trailers, and nothing of a handler that panicked before its body
// went out.
type wholeBodyWriter struct {
	w   http.ResponseWriter
	buf *[]byte
	// status and head are set at WriteHeader or the first Write, when
	// net/http takes the head it sends.
	status int
	head   http.Header
	// streaming: the head has gone out; writes go straight through.
	streaming bool
}

func (w *wholeBodyWriter) Header() http.Header { return w.w.Header() }

// Unwrap lets http.ResponseController reach the connection's writer for
// what this one does not do itself.
func (w *wholeBodyWriter) Unwrap() http.ResponseWriter { return w.w }

func (w *wholeBodyWriter) WriteHeader(code int) {
	switch {
	case w.status != 0:
	case code >= 100 && code < 200 && code != http.StatusSwitchingProtocols:
		// An informational head goes out at once, as net/http sends it.
		w.w.WriteHeader(code)
	default:
		w.setStatus(code)
	}
}

// setStatus takes the head net/http would send. A response that declares
// trailers needs chunks: it streams from here.
func (w *wholeBodyWriter) setStatus(code int) {
	w.status = code
	w.head = w.w.Header().Clone()
	if w.head["Trailer"] != nil {
		_ = w.stream()
	}
}

func (w *wholeBodyWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.setStatus(http.StatusOK)
	}
	if w.streaming {
		return w.w.Write(p)
	}
	if len(*w.buf)+len(p) <= protocol.InlineBody {
		*w.buf = append(*w.buf, p...)
		return len(p), nil
	}
	if err := w.stream(); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

// Flush sends the head and what is held back, and streams from then on.
func (w *wholeBodyWriter) Flush() {
	_ = w.FlushError()
}

// FlushError is Flush reporting a failed write, as http.ResponseController
// asks.
func (w *wholeBodyWriter) FlushError() error {
	if err := w.stream(); err != nil {
		return err
	}
	return http.NewResponseController(w.w).Flush()
}

// stream sends the head and the body held back so far.
func (w *wholeBodyWriter) stream() error {
	if w.streaming {
		return nil
	}
	w.streaming = true
	w.sendHead(false)
	if len(*w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(*w.buf)
	return err
}

// finish sends a body held back whole, with its length unless the handler
// declared one itself or the response has trailers, which need chunks.
func (w *wholeBodyWriter) finish() {
	if w.streaming {
		return
	}
	w.sendHead(true)
	if len(*w.buf) > 0 {
		_, _ = w.w.Write(*w.buf)
	}
}

// sendHead puts back the head as it stood when the status was set, keeps
// the trailers set since, adds the body's length when whole says it is
// held back whole, and writes the status.
func (w *wholeBodyWriter) sendHead(whole bool) {
	if w.status == 0 {
		w.setStatus(http.StatusOK)
		if w.streaming {
			return
		}
	}
	h := w.w.Header()
	trailers := false
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			trailers = true
		} else {
			delete(h, k)
		}
	}
	for k, v := range w.head {
		h[k] = v
	}
	if whole && !trailers && bodyAllowed(w.status) && h.Get("Content-Length") == "" {
		h["Content-Length"] = []string{strconv.Itoa(len(*w.buf))}
	}
	w.w.WriteHeader(w.status)
}

// release returns the buffer.
func (w *wholeBodyWriter) release() {
	*w.buf = (*w.buf)[:0]
	bodyBuffers.Put(w.buf)
	w.buf = nil
}

// bodyAllowed reports whether a response with the status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

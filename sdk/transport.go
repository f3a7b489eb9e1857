package sdk

import (
	"bytes"
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"strconv"

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
	// The path is as the caller sent it, percent-encoded, as on the data
	// socket: routed on its segments as the host routed it, and decoded
	// into the path parameters the host checked (a%2Fb is one segment,
	// a/b).
	target := head.Path
	if head.RawQuery != "" {
		target += "?" + head.RawQuery
	}
	req, err := http.NewRequestWithContext(stream.Context(), head.Method, target, body)
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
		next.ServeHTTP(w, r.WithContext(WithRequestInfo(r.Context(), info)))
	})
}

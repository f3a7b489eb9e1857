package protocol

import (
	"errors"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// ChunkSize bounds one body message of the HandleHTTP stream, in either
// direction, well under gRPC's default 4 MB message limit, so bodies of any
// size stream through.
const ChunkSize = 64 << 10

// The client side of the HandleHTTP stream, which the host's proxy and the
// test harness both speak: SendRequest sends the request, RecvResponseHead
// reads the response's head, and a ResponseBody reads the rest. A caller
// sends from its own goroutine while it reads the response: a handler may
// answer before it has read the whole body, and one that streams its
// answer while reading would stall a send-then-receive exchange once
// gRPC's flow-control windows fill up in both directions.

// SendRequest sends a request's head, then its body in ChunkSize parts,
// then closes its side of the stream. body is sent without copying and must
// not change until SendRequest returns.
func SendRequest(stream pluginv1.Plugin_HandleHTTPClient, head *pluginv1.HTTPRequestHead, body []byte) error {
	if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Head{Head: head}}); err != nil {
		return err
	}
	for len(body) > 0 {
		n := min(len(body), ChunkSize)
		if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Body{Body: body[:n]}}); err != nil {
			return err
		}
		body = body[n:]
	}
	return stream.CloseSend()
}

// ErrNoResponseHead is a response whose first message is not its head.
var ErrNoResponseHead = errors.New("plugin response did not start with a head")

// RecvResponseHead reads the response's head, which the plugin sends first.
func RecvResponseHead(stream pluginv1.Plugin_HandleHTTPClient) (*pluginv1.HTTPResponseHead, error) {
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	rh := first.GetHead()
	if rh == nil {
		return nil, ErrNoResponseHead
	}
	return rh, nil
}

// ResponseBody reads the body parts of the HandleHTTP stream that follow
// the response head; it returns io.EOF once the plugin has sent the whole
// body, and the stream's error if the exchange broke.
type ResponseBody struct {
	stream pluginv1.Plugin_HandleHTTPClient
	buf    []byte
}

// NewResponseBody reads the response body of stream, whose head has been
// read.
func NewResponseBody(stream pluginv1.Plugin_HandleHTTPClient) *ResponseBody {
	return &ResponseBody{stream: stream}
}

func (b *ResponseBody) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		part, err := b.stream.Recv()
		if err != nil {
			return 0, err
		}
		b.buf = part.GetBody()
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// SetSocketHeaders sets on a request passed on over the data socket the
// headers the plugin reads there in place of the HandleHTTP head: the data
// token, the request id, the matched route and, unless the caller is
// anonymous (nil), the principal. set is the request's header setter.
func SetSocketHeaders(set func(key, value string), token, requestID, route string, principal *pluginv1.Principal) error {
	set(HeaderToken, token)
	set(HeaderRequestID, requestID)
	set(HeaderRoute, route)
	if principal != nil {
		enc, err := EncodePrincipal(principal)
		if err != nil {
			return err
		}
		set(HeaderPrincipal, enc)
	}
	return nil
}

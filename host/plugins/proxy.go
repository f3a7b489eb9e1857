package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// dataPlane is how HTTP reaches a running plugin: its private unix socket
// when the plugin accepted one, else the HandleHTTP gRPC stream.
type dataPlane struct {
	socketPath string
	token      string
	socket     *fasthttp.HostClient
}

func newSocketClient(path string) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr: "plugin",
		Dial: func(string) (net.Conn, error) {
			return net.DialTimeout("unix", path, time.Second)
		},
		MaxConns:                      1024,
		MaxIdleConnDuration:           30 * time.Second,
		ReadTimeout:                   5 * time.Minute,
		WriteTimeout:                  5 * time.Minute,
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		// A plugin restart leaves dead idle connections; retry idempotent
		// requests once on a fresh one.
		MaxIdemponentCallAttempts: 2,
	}
}

// UnavailableError says a plugin cannot serve now and when to try again,
// or, when Down is set, that it is down until the host restarts.
type UnavailableError struct {
	Plugin     string
	RetryAfter time.Duration
	// Down says why the supervisor gave up on the plugin; no retry helps.
	Down string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("plugin %s is unavailable: %v", e.Plugin, e.Err)
}

func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// strippedHeaders never reach a plugin: the host has already authenticated
// the caller, and a plugin must not see or replay credentials.
var strippedHeaders = []string{
	fiber.HeaderAuthorization, fiber.HeaderCookie, "X-Api-Key",
	protocol.HeaderToken, protocol.HeaderPrincipal, protocol.HeaderRoute,
}

// Proxy forwards the request in c to the route's plugin with the verified
// principal, and writes the plugin's response into c.
func (s *Supervisor) Proxy(c *fiber.Ctx, r *Route, pathParams map[string]string, principal *pluginv1.Principal, requestID string) error {
	inst := s.instances[r.Plugin]
	rpc, plane, err := inst.running()
	if err != nil {
		return err
	}
	t0 := time.Now()
	defer func() { s.metrics.rpc.WithLabelValues(r.Plugin, "http").Observe(time.Since(t0).Seconds()) }()
	if plane.socket != nil {
		err = proxySocket(c, plane, r, principal, requestID)
	} else {
		err = proxyStream(c, rpc, r, pathParams, principal, requestID)
	}
	if err != nil {
		s.metrics.rpcErrors.WithLabelValues(r.Plugin, "http").Inc()
		return unavailable(r.Plugin, time.Now().Add(time.Second), err)
	}
	return nil
}

func unavailable(plugin string, retryAt time.Time, err error) error {
	wait := time.Until(retryAt).Round(time.Second)
	if wait < time.Second {
		wait = time.Second
	}
	return &UnavailableError{Plugin: plugin, RetryAfter: wait, Err: err}
}

func proxySocket(c *fiber.Ctx, plane dataPlane, r *Route, principal *pluginv1.Principal, requestID string) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	c.Request().CopyTo(req)
	for _, h := range strippedHeaders {
		req.Header.Del(h)
	}
	req.Header.Set(protocol.HeaderToken, plane.token)
	req.Header.Set(protocol.HeaderRequestID, requestID)
	req.Header.Set(protocol.HeaderRoute, r.Pattern)
	if principal != nil {
		enc, err := sdk.EncodePrincipalHeader(principal)
		if err != nil {
			return err
		}
		req.Header.Set(protocol.HeaderPrincipal, enc)
	}
	req.SetHost("plugin")
	if err := plane.socket.Do(req, resp); err != nil {
		return err
	}
	out := c.Response()
	out.SetStatusCode(resp.StatusCode())
	for k, v := range resp.Header.All() {
		switch string(k) {
		case fiber.HeaderContentLength, fiber.HeaderConnection, fiber.HeaderTransferEncoding, fiber.HeaderServer, fiber.HeaderDate:
		default:
			out.Header.AddBytesKV(k, v)
		}
	}
	out.SetBody(resp.Body())
	return nil
}

// proxyStream carries the exchange over the HandleHTTP stream. The request
// is sent from its own goroutine while the response is read: a handler may
// answer before it has read the whole body (a 413, say), and one that
// streams its answer while reading would stall a send-then-receive
// exchange once gRPC's flow-control windows fill up in both directions.
func proxyStream(c *fiber.Ctx, rpc *protocol.Client, r *Route, pathParams map[string]string, principal *pluginv1.Principal, requestID string) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 5*time.Minute)
	defer cancel()
	stream, err := rpc.HandleHTTP(ctx)
	if err != nil {
		return err
	}
	headers := map[string]*pluginv1.HeaderValues{}
	for k, v := range c.Request().Header.All() {
		key := string(k)
		if h, ok := headers[key]; ok {
			h.Values = append(h.Values, string(v))
			continue
		}
		headers[key] = &pluginv1.HeaderValues{Values: []string{string(v)}}
	}
	for _, h := range strippedHeaders {
		delete(headers, h)
	}
	head := &pluginv1.HTTPRequestHead{
		Method: c.Method(), Path: c.Path(), RawQuery: string(c.Request().URI().QueryString()),
		Headers: headers, Principal: principal, RemoteAddr: c.Context().RemoteAddr().String(),
		RequestId: requestID, Route: r.Pattern, PathParams: pathParams,
	}
	body := c.Body()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		// A failed send ends the sending and nothing else: the stream has
		// ended, and the receiving side learns how — with the plugin's
		// whole answer when it answered without reading the rest of the
		// body, else with the error.
		_ = sendRequest(stream, head, body)
	}()
	err = relayResponse(c, stream)
	// The exchange is over: stop a send the plugin no longer reads, and let
	// go of the request body, which fasthttp reuses once the handler has
	// returned.
	cancel()
	<-sent
	return err
}

func sendRequest(stream pluginv1.Plugin_HandleHTTPClient, head *pluginv1.HTTPRequestHead, body []byte) error {
	if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Head{Head: head}}); err != nil {
		return err
	}
	for len(body) > 0 {
		n := min(len(body), 64<<10)
		if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Body{Body: body[:n]}}); err != nil {
			return err
		}
		body = body[n:]
	}
	return stream.CloseSend()
}

func relayResponse(c *fiber.Ctx, stream pluginv1.Plugin_HandleHTTPClient) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	rh := first.GetHead()
	if rh == nil {
		return errors.New("plugin response did not start with a head")
	}
	out := c.Response()
	out.SetStatusCode(int(rh.Status))
	for k, v := range rh.Headers {
		if k == fiber.HeaderContentLength {
			continue
		}
		for _, val := range v.Values {
			out.Header.Add(k, val)
		}
	}
	w := out.BodyWriter()
	for {
		part, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(part.GetBody()); err != nil {
			return err
		}
	}
}

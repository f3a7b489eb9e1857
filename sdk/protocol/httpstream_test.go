package protocol_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// echoPlugin answers HandleHTTP by counting the request's body parts and
// echoing its body in one part, or, for the path /headless, with a body
// part before any head.
type echoPlugin struct {
	pluginv1.UnimplementedPluginServer
	parts chan int
}

func (p *echoPlugin) HandleHTTP(stream pluginv1.Plugin_HandleHTTPServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	var body []byte
	parts := 0
	for {
		part, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		parts++
		body = append(body, part.GetBody()...)
	}
	p.parts <- parts
	if first.GetHead().GetPath() == "/headless" {
		return stream.Send(&pluginv1.HTTPResponsePart{Part: &pluginv1.HTTPResponsePart_Body{Body: body}})
	}
	if err := stream.Send(&pluginv1.HTTPResponsePart{Part: &pluginv1.HTTPResponsePart_Head{Head: &pluginv1.HTTPResponseHead{Status: 201}}}); err != nil {
		return err
	}
	for len(body) > 0 {
		n := min(len(body), 1000)
		if err := stream.Send(&pluginv1.HTTPResponsePart{Part: &pluginv1.HTTPResponsePart_Body{Body: body[:n]}}); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

func TestHTTPStreamClient(t *testing.T) {
	impl := &echoPlugin{parts: make(chan int, 1)}
	client := pluginv1.NewPluginClient(serve(t, impl))
	body := bytes.Repeat([]byte("0123456789abcdef"), protocol.ChunkSize/16*2+1)

	stream, err := client.HandleHTTP(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.SendRequest(stream, &pluginv1.HTTPRequestHead{Method: "POST", Path: "/echo"}, body); err != nil {
		t.Fatal(err)
	}
	if parts := <-impl.parts; parts != 3 {
		t.Errorf("a %d-byte body went in %d parts, want 3", len(body), parts)
	}
	head, err := protocol.RecvResponseHead(stream)
	if err != nil || head.Status != 201 {
		t.Fatalf("head %v, %v", head, err)
	}
	got, err := io.ReadAll(protocol.NewResponseBody(stream))
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("body of %d bytes (%v), want the %d sent", len(got), err, len(body))
	}

	stream, err = client.HandleHTTP(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.SendRequest(stream, &pluginv1.HTTPRequestHead{Method: "GET", Path: "/headless"}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	<-impl.parts
	if _, err := protocol.RecvResponseHead(stream); !errors.Is(err, protocol.ErrNoResponseHead) {
		t.Errorf("headless response: %v, want ErrNoResponseHead", err)
	}
}

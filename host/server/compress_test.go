package server

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// TestCompression: answers are compressed as the client accepts, and a
// body compressed once is sent again from what was kept, byte for byte;
// what is not kept (a stream, another encoding) is compressed as before,
// and what should not be compressed is not.
func TestCompression(t *testing.T) {
	z := newCompression()
	app := fiber.New()
	app.Use(z.handler)
	page := strings.Repeat(`{"id":"/subscriptions/s-1/resourceGroups/rg/providers/x/y","tags":{"env":"prod"}},`, 200)
	other := strings.Replace(page, "prod", "test", 1)
	app.Get("/json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		c.Set(fiber.HeaderVary, "Origin")
		return c.SendString(page)
	})
	app.Get("/other", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(other)
	})
	app.Get("/small", func(c *fiber.Ctx) error { return c.JSON(map[string]int{"n": 1}) })
	app.Get("/png", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "image/png")
		return c.SendString(page)
	})
	app.Get("/encoded", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		c.Set(fiber.HeaderContentEncoding, "identity")
		return c.SendString(page)
	})
	large := strings.Repeat(page, 20)
	app.Get("/large", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(large)
	})
	app.Get("/stream", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/csv")
		c.Response().SetBodyStream(strings.NewReader(page), -1)
		return nil
	})

	get := func(path, accept string) (body []byte, encoding, vary string) {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b, resp.Header.Get(fiber.HeaderContentEncoding), resp.Header.Get(fiber.HeaderVary)
	}
	decode := func(encoding string, b []byte) string {
		t.Helper()
		var out []byte
		var err error
		switch encoding {
		case "gzip":
			out, err = fasthttp.AppendGunzipBytes(nil, b)
		case "br":
			out, err = fasthttp.AppendUnbrotliBytes(nil, b)
		case "deflate":
			out, err = fasthttp.AppendInflateBytes(nil, b)
		default:
			out = b
		}
		if err != nil {
			t.Fatalf("decode %s: %v", encoding, err)
		}
		return string(out)
	}

	for _, tc := range []struct{ accept, want string }{
		{"gzip", "gzip"},
		{"gzip, deflate, br", "br"},
		{"br", "br"},
	} {
		first, enc, vary := get("/json", tc.accept)
		if enc != tc.want || decode(enc, first) != page || vary != "Origin, Accept-Encoding" {
			t.Fatalf("Accept-Encoding %q: encoding %q, vary %q, body decodes to the page: %v", tc.accept, enc, vary, decode(enc, first) == page)
		}
		hits := z.kept.Metrics().Hits
		again, enc, _ := get("/json", tc.accept)
		if enc != tc.want || !bytes.Equal(again, first) {
			t.Errorf("Accept-Encoding %q again: encoding %q, same bytes %v", tc.accept, enc, bytes.Equal(again, first))
		}
		if z.kept.Metrics().Hits != hits+1 {
			t.Errorf("Accept-Encoding %q again: compressed again instead of sent as kept", tc.accept)
		}
	}
	// Another body is compressed for itself, never answered with one kept.
	if b, enc, _ := get("/other", "gzip"); enc != "gzip" || decode(enc, b) != other {
		t.Errorf("another body: encoding %q, decodes to it: %v", enc, decode(enc, b) == other)
	}

	// Not kept, compressed as fasthttp does: a body over maxKeptBody, a
	// stream, and deflate.
	kept := z.kept.Len()
	if b, enc, _ := get("/large", "gzip"); len(large) <= maxKeptBody || enc != "gzip" || decode(enc, b) != large || z.kept.Len() != kept {
		t.Errorf("%d bytes: encoding %q, decodes to them: %v, kept %d more", len(large), enc, decode(enc, b) == large, z.kept.Len()-kept)
	}
	if b, enc, _ := get("/stream", "gzip"); enc != "gzip" || decode(enc, b) != page {
		t.Errorf("stream: encoding %q, decodes to the page: %v", enc, decode(enc, b) == page)
	}
	if b, enc, _ := get("/json", "deflate"); enc != "deflate" || decode(enc, b) != page {
		t.Errorf("deflate: encoding %q, decodes to the page: %v", enc, decode(enc, b) == page)
	}

	// Sent as they are.
	for _, tc := range []struct{ path, accept, encoding string }{
		{"/json", "", ""},
		{"/small", "gzip", ""},
		{"/png", "gzip", ""},
		{"/encoded", "gzip", "identity"},
	} {
		b, enc, _ := get(tc.path, tc.accept)
		if enc != tc.encoding || (tc.path != "/small" && string(b) != page) {
			t.Errorf("%s with Accept-Encoding %q: encoding %q, body sent as it is: %v", tc.path, tc.accept, enc, string(b) == page)
		}
	}
}

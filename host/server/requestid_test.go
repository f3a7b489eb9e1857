package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

func TestAssignRequestID(t *testing.T) {
	app := fiber.New()
	app.Use(assignRequestID)
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString(requestID(c)) })
	for _, tt := range []struct {
		sent string
		keep bool
	}{
		{"", false},
		{"req-42", true},
		{"7f0c1b2e-5d1a-4c33-9a0e-0d3c9e1f2a4b", true},
		{"svc.api:trace_01", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"<script>alert(1)</script>", false},
		{"id with spaces", false},
		{"a\tb", false},
		{"line\rbreak", false},
		{"ünïcode", false},
		{`"quoted"`, false},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		if tt.sent != "" {
			req.Header.Set("X-Request-Id", tt.sent)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Header.Get("X-Request-Id")
		body := make([]byte, 256)
		n, _ := resp.Body.Read(body)
		if string(body[:n]) != got {
			t.Errorf("sent %q: handler saw %q, response header %q", tt.sent, body[:n], got)
		}
		if tt.keep && got != tt.sent {
			t.Errorf("sent %q: got %q, want it kept", tt.sent, got)
		}
		if !tt.keep && (got == tt.sent || !safeRequestID(got) || len(got) != 36) {
			t.Errorf("sent %q: got %q, want a generated id", tt.sent, got)
		}
	}
}

package server

import (
	"bytes"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestLingeringDeliversTheRefusal: a client sending a body over the limit
// reads the server's 413 rather than a reset connection, each time.
func TestLingeringDeliversTheRefusal(t *testing.T) {
	app := fiber.New(fiber.Config{BodyLimit: 64 << 10, DisableStartupMessage: true})
	app.Post("/", func(c *fiber.Ctx) error { return c.SendStatus(http.StatusNoContent) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(Lingering(ln)) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	url := "http://" + ln.Addr().String() + "/"
	body := make([]byte, 16<<20)
	for i := range 20 {
		resp, err := http.Post(url, "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("upload %d of 16 MiB: %v, want the server's 413", i, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("upload %d of 16 MiB: %d, want 413", i, resp.StatusCode)
		}
	}
	resp, err := http.Post(url, "application/octet-stream", bytes.NewReader(body[:1024]))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a small upload after them: %v %v", resp, err)
	}
	_ = resp.Body.Close()
}

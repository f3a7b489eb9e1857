package server

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

const (
	localRequestID = "steward.request_id"
	// maxRequestIDLen bounds a client's request id: it is echoed, logged
	// and stored with audit entries.
	maxRequestIDLen = 128
)

// assignRequestID keeps a client's X-Request-Id when it is a short token of
// safe characters, so a caller can correlate its own logs with ours, and
// otherwise generates one: an id that reaches logs and the audit trail
// must not carry markup, separators or control characters.
func assignRequestID(c *fiber.Ctx) error {
	id := c.Get(fiber.HeaderXRequestID)
	if !safeRequestID(id) {
		id = uuid.NewString()
	}
	c.Locals(localRequestID, id)
	c.Set(fiber.HeaderXRequestID, id)
	return c.Next()
}

func safeRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.' || b == ':') {
			return false
		}
	}
	return true
}

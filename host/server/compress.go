package server

import (
	"bytes"
	"crypto/sha256"

	"github.com/gofiber/fiber/v2"
	"github.com/jellydator/ttlcache/v3"
	"github.com/valyala/fasthttp"
)

// Limits of the compressed bodies kept.
const (
	// minCompressed is fasthttp's: a smaller body is sent as it is, since
	// compressing it would rarely make it smaller.
	minCompressed = 200
	// maxKeptBody is the largest body whose compressed form is kept; a
	// larger one is compressed on every answer.
	maxKeptBody = 256 << 10
	// keptBytes bounds the compressed bytes kept in all.
	keptBytes = 32 << 20
)

// compression compresses answers as fasthttp's handler does, brotli when
// the client accepts it and gzip otherwise, at the fastest level, and
// keeps the compressed form of each body it has compressed whole, under
// the encoding and the SHA-256 of the body. The reads repeat the same
// answer between two syncs (a page of the inventory, a framework's
// coverage), and hashing it costs a small fraction of compressing it
// again; compression was a sixth of the host's CPU under load. What is
// kept is what compressing those bytes again would give, so an answer
// never depends on whose request filled the cache.
type compression struct {
	kept *ttlcache.Cache[compressedKey, []byte]
	// others compresses what is not kept: a streamed body (which it
	// compresses as it streams), one too large to keep, or one the client
	// wants in another encoding (deflate, zstd).
	others fasthttp.RequestHandler
}

type compressedKey struct {
	encoding string
	sum      [sha256.Size]byte
}

func newCompression() *compression {
	return &compression{
		kept: ttlcache.New(
			ttlcache.WithMaxCost[compressedKey, []byte](keptBytes, func(it ttlcache.CostItem[compressedKey, []byte]) uint64 {
				return uint64(len(it.Value)) + sha256.Size
			}),
		),
		others: fasthttp.CompressHandlerBrotliLevel(func(*fasthttp.RequestCtx) {}, fasthttp.CompressBrotliBestSpeed, fasthttp.CompressBestSpeed),
	}
}

// handler is the middleware: it compresses what the handlers after it
// answered.
func (z *compression) handler(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		return err
	}
	encoding := ""
	switch h := &c.Request().Header; {
	case h.HasAcceptEncoding("br"):
		encoding = "br"
	case h.HasAcceptEncoding("gzip"):
		encoding = "gzip"
	}
	resp := c.Response()
	if encoding == "" || resp.IsBodyStream() || len(resp.Header.ContentEncoding()) > 0 || !compressible(resp.Header.ContentType()) {
		z.others(c.Context())
		return nil
	}
	body := resp.Body()
	if len(body) < minCompressed {
		return nil
	}
	if len(body) > maxKeptBody {
		z.others(c.Context())
		return nil
	}
	key := compressedKey{encoding: encoding, sum: sha256.Sum256(body)}
	var out []byte
	if it := z.kept.Get(key); it != nil {
		out = it.Value()
	} else {
		if encoding == "br" {
			out = fasthttp.AppendBrotliBytesLevel(nil, body, fasthttp.CompressBrotliBestSpeed)
		} else {
			out = fasthttp.AppendGzipBytesLevel(nil, body, fasthttp.CompressBestSpeed)
		}
		z.kept.Set(key, out, ttlcache.NoTTL)
	}
	// The kept slice is shared by every answer that sends it and never
	// written to.
	resp.SetBodyRaw(out)
	resp.Header.SetContentEncoding(encoding)
	switch vary := resp.Header.Peek(fiber.HeaderVary); {
	case len(vary) == 0:
		resp.Header.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	case !bytes.Contains(bytes.ToLower(vary), []byte("accept-encoding")):
		resp.Header.Set(fiber.HeaderVary, string(vary)+", "+fiber.HeaderAcceptEncoding)
	}
	return nil
}

// compressible is fasthttp's rule for the content types it compresses.
func compressible(contentType []byte) bool {
	for _, prefix := range []string{"text/", "application/", "image/svg", "image/x-icon", "font/", "multipart/"} {
		if bytes.HasPrefix(contentType, []byte(prefix)) {
			return true
		}
	}
	return false
}

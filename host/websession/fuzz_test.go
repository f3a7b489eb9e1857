package websession_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/websession"
)

// FuzzSafeNext feeds the sign-in's return path arbitrary text. What comes
// back is DefaultNext or a path that, resolved as a browser resolves a
// Location header against Steward's own address, stays on Steward's
// origin and is no sign-in page; and it is its own safe form.
func FuzzSafeNext(f *testing.F) {
	for _, seed := range []string{
		"/dashboard?tenant_id=t-1", "/resources#quotas", "//evil.example/x", "/\\evil.example",
		"https://evil.example/", "javascript:alert(1)", "/x\r\nLocation: http://e/", "/login?next=/dmarc",
		"/%2F%2Fevil.example", "/./login", "/%2e%2e//evil.example", "/a/../..//evil.example", "/\t/evil.example",
		"/@evil.example", "/a:b@evil.example/", "/%5Cevil.example", "/\u3000/evil.example",
	} {
		f.Add(seed)
	}
	base, _ := url.Parse("https://steward.example/app/")
	f.Fuzz(func(t *testing.T, raw string) {
		next := websession.SafeNext(raw)
		if next == websession.DefaultNext {
			return
		}
		if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\") {
			t.Fatalf("SafeNext(%q) = %q", raw, next)
		}
		for _, r := range next {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("SafeNext(%q) = %q holds a control character", raw, next)
			}
		}
		u, err := url.Parse(next)
		if err != nil {
			t.Fatalf("SafeNext(%q) = %q does not parse: %v", raw, next, err)
		}
		if to := base.ResolveReference(u); to.Scheme != base.Scheme || to.Host != base.Host || to.User != nil {
			t.Fatalf("SafeNext(%q) = %q leads to %s", raw, next, to)
		}
		switch u.Path {
		case "/login", "/auth/login", "/logout", "/auth/logout":
			t.Fatalf("SafeNext(%q) = %q, a sign-in page", raw, next)
		}
		if again := websession.SafeNext(next); again != next {
			t.Fatalf("SafeNext(%q) = %q, but SafeNext(%q) = %q", raw, next, next, again)
		}
	})
}

// FuzzCSRF presents arbitrary tokens as the cookie and the header of a
// state-changing request. A request verifies only when its cookie and the
// token it presents are the same, and a token verifies for one user at
// most, and under no other host's key; a token issued to a user verifies
// for that user.
func FuzzCSRF(f *testing.F) {
	s := websession.New("0123456789abcdef0123456789abcdef", false)
	other := websession.New("another secret, 32 bytes or more!", false)
	issued := s.NewCSRF("user-1")
	for _, seed := range [][3]string{
		{"user-1", issued, issued},
		{"user-2", issued, issued},
		{"", s.NewCSRF(""), ""},
		{"user-1", "x" + issued, "x" + issued},
		{"user-1", "abc", "abc"},
		{"user-1", "." + strings.SplitN(issued, ".", 2)[1], "." + strings.SplitN(issued, ".", 2)[1]},
		{"user-1\x00x", issued, issued},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, subject, cookie, presented string) {
		if s.ValidCSRF(subject, cookie, presented) && cookie != presented {
			t.Fatalf("cookie %q and presented %q differ but verify", cookie, presented)
		}
		if s.CSRFFor(subject, cookie) {
			for _, another := range []string{"user-1", "user-2", "", subject + "x", "x" + subject} {
				if another != subject && s.CSRFFor(another, cookie) {
					t.Fatalf("%q verifies for %q and for %q", cookie, subject, another)
				}
			}
		}
		if other.CSRFFor(subject, cookie) {
			t.Fatalf("%q verifies for %q under a key that issued nothing", cookie, subject)
		}
		tok := s.NewCSRF(subject)
		if !s.ValidCSRF(subject, tok, tok) {
			t.Fatalf("a token issued to %q does not verify", subject)
		}
	})
}

package jsonbody

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stewardhq/steward/sdk/protocol"
)

// FuzzSanitize feeds the plain-text reader of names and descriptions
// arbitrary text. What it keeps is its own plain form (sanitized again it
// is unchanged: no markup is left in it, encoded or not), trimmed, and
// what Plain accepts is that text within its bounds.
func FuzzSanitize(f *testing.F) {
	for _, seed := range []string{
		"Disks encrypted", "  spaced  ", "<script>alert(1)</script>Disks", "&lt;script&gt;alert(1)&lt;/script&gt;Disks",
		"&amp;lt;b&amp;gt;x", "<img src=x onerror=alert(1)>Disks", "R&D, 3 < 5 and 7 > 6", "<scr<script>ipt>alert(1)</script>",
		"a\u0085b", "line\nbreak\ttab", "&#60;b&#62;bold&#60;/b&#62;", "<!-- c -->x", "<style>p{}</style>y", "\xff<b>",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		clean, ok := Sanitize(s)
		if ok {
			if clean != strings.TrimSpace(clean) {
				t.Fatalf("Sanitize(%q) = %q, not trimmed", s, clean)
			}
			if again, ok := Sanitize(clean); !ok || again != clean {
				t.Fatalf("Sanitize(%q) = %q, but Sanitize(%q) = %q, %v", s, clean, clean, again, ok)
			}
		}
		var p Problems
		plain, accepted := p.Plain("body.name", s, 200, false)
		want := ok && utf8.RuneCountInString(clean) <= 200 && !protocol.ControlChars(clean, false)
		if accepted != want || (accepted && (plain != clean || p.Len() != 0)) || (!accepted && p.Len() != 1) {
			t.Fatalf("Plain(%q) = %q, %v with %d problems; Sanitize gave %q, %v", s, plain, accepted, p.Len(), clean, ok)
		}
	})
}

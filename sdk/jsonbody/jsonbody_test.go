package jsonbody

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

// TestSanitize: markup goes, encoded markup too; the text stays, with its
// ampersands and comparisons as plain text.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"Disks encrypted":                                        "Disks encrypted",
		"  spaced  ":                                             "spaced",
		"<script>alert(1)</script>Disks":                         "Disks",
		"<b>bold</b> and <i>italic</i>":                          "bold and italic",
		"&lt;script&gt;alert(1)&lt;/script&gt;Disks":             "Disks",
		"&amp;lt;script&amp;gt;alert(1)&amp;lt;/script&amp;gt;x": "x",
		"<img src=x onerror=alert(1)>Disks":                      "Disks",
		"<a href=\"javascript:alert(1)\">link</a>":               "link",
		"R&D, 3 < 5 and 7 > 6":                                   "R&D, 3 < 5 and 7 > 6",
		"Tom's \"disks\"":                                        "Tom's \"disks\"",
		"<scr<script>ipt>alert(1)</script>":                      "ipt>alert(1)",
	} {
		got, ok := Sanitize(in)
		if !ok || got != want {
			t.Errorf("Sanitize(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if strings.Contains(strings.ToLower(got), "<script") {
			t.Errorf("Sanitize(%q) kept a script tag: %q", in, got)
		}
	}
	deep := "<script>x</script>"
	for range sanitizeRounds + 1 {
		deep = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(deep)
	}
	if got, ok := Sanitize(deep); ok {
		t.Errorf("sanitize of %d layers of encoding = %q, want refused", sanitizeRounds+1, got)
	}
}

func problemsOf(t *testing.T, err error) []sdk.ErrorDetail {
	t.Helper()
	var p *sdk.Problem
	if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("%v, want a 422 problem", err)
	}
	return p.Errors
}

// TestRead: a JSON object within the size is read by member; anything
// else is a 422 naming the body.
func TestRead(t *testing.T) {
	o, err := Read(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"a":"x","b":null}`)), 64)
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := o.Get("a"); !ok || string(raw) != `"x"` {
		t.Errorf("a = %s, %v", raw, ok)
	}
	if _, ok := o.Get("b"); ok {
		t.Error("a null member is got")
	}
	if _, ok := o["b"]; !ok {
		t.Error("a null member is not kept apart from an absent one")
	}
	for name, body := range map[string]string{"array": `[1]`, "null": `null`, "not JSON": `{`, "too large": `{"a":"` + strings.Repeat("x", 64) + `"}`} {
		_, err := Read(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)), 64)
		if errs := problemsOf(t, err); len(errs) != 1 || errs[0].Location != "body" {
			t.Errorf("%s: %+v, want one problem naming body", name, errs)
		}
	}
}

// TestProblems: every invalid member is named in one 422, in the order
// found; members outside the body's are refused, the service's named apart.
func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil || p.Len() != 0 {
		t.Fatal("no problem is an error")
	}
	o := Object{"id": []byte(`1`), "zeta": []byte(`1`), "name": []byte(`2`), "notes": []byte(`"ok"`)}
	p.Members(o, []string{"name", "notes"}, []string{"id"})
	if _, ok := p.String("body.name", o["name"]); ok {
		t.Error("a number read as a string")
	}
	if s, ok := p.Text("body.notes", o["notes"], 10, false); !ok || s != "ok" {
		t.Errorf("notes = %q, %v", s, ok)
	}
	p.AddErr("body.schema", sdk.Invalid("body.schema.pattern", "too long"))
	if p.Len() != 4 {
		t.Errorf("%d problems recorded, want 4", p.Len())
	}
	var got []string
	for _, e := range problemsOf(t, p.Err()) {
		got = append(got, e.Location+": "+e.Message)
	}
	want := []string{"body.id: is set by the service; leave it out", "body.zeta: is not a field of this body",
		"body.name: must be a string", "body.schema.pattern: too long"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// TestText: plain text within its length, control characters refused but
// line breaks and tabs in multi-line text.
func TestText(t *testing.T) {
	for _, c := range []struct {
		in        string
		multiline bool
		want      string
		problem   string
	}{
		{`"<b>Disks</b> "`, false, "Disks", ""},
		{`"two\nlines"`, true, "two\nlines", ""},
		{`"two\nlines"`, false, "", "control characters"},
		{`"tab\tbed"`, false, "", "control characters"},
		{`"` + strings.Repeat("é", 10) + `"`, false, "", "at most 9 characters"},
		{`"` + strings.Repeat("é", 9) + `"`, false, strings.Repeat("é", 9), ""},
		{`"&amp;lt;b&amp;gt;x"`, false, "x", ""},
	} {
		var decoded string
		if err := json.Unmarshal([]byte(c.in), &decoded); err != nil {
			t.Fatal(err)
		}
		// Plain checks the decoded string as Text checks the member.
		for name, read := range map[string]func(*Problems) (string, bool){
			"Text":  func(p *Problems) (string, bool) { return p.Text("body.t", []byte(c.in), 9, c.multiline) },
			"Plain": func(p *Problems) (string, bool) { return p.Plain("body.t", decoded, 9, c.multiline) },
		} {
			var p Problems
			got, ok := read(&p)
			err := p.Err()
			switch {
			case c.problem == "" && (!ok || got != c.want || err != nil):
				t.Errorf("%s %s: %q, %v, %v; want %q", name, c.in, got, ok, err, c.want)
			case c.problem != "" && (ok || got != "" || err == nil || !strings.Contains(problemsOf(t, err)[0].Message, c.problem)):
				t.Errorf("%s %s: %q, %v, %v; want a problem saying %q", name, c.in, got, ok, err, c.problem)
			}
		}
	}
}

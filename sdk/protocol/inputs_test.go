package protocol

import (
	"maps"
	"slices"
	"testing"
)

func TestInputErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Inputs
		want []string
	}{
		{"clean", Inputs{PathParams: map[string]string{"id": "t-1"}, Query: [][2]string{{"q", "café"}},
			ContentType: "application/json", Body: []byte(`{"notes":"a\nb\tc"}`)}, nil},
		{"path parameters in name order", Inputs{PathParams: map[string]string{"b": "x\x00", "a": "\x7f"}}, []string{"path.a", "path.b"}},
		{"a query name once", Inputs{Query: [][2]string{{"q", "\x01"}, {"q", "\x02"}, {"r", "ok"}}}, []string{"query.q"}},
		{"query name echoed printable", Inputs{Query: [][2]string{{"a\x07b", "1"}}}, []string{"query.ab"}},
		{"C1 control", Inputs{Query: [][2]string{{"q", "a\u0085b"}}}, []string{"query.q"}},
		{"invalid UTF-8", Inputs{Query: [][2]string{{"q", "\xff"}}}, []string{"query.q"}},
		{"a line break is not query text", Inputs{Query: [][2]string{{"q", "a\nb"}}}, []string{"query.q"}},
		{"form value may span lines", Inputs{ContentType: "application/x-www-form-urlencoded; charset=utf-8",
			Form: [][2]string{{"notes", "a\r\nb"}, {"name", "a\bb"}}}, []string{"body.name"}},
		{"form ignored for JSON", Inputs{ContentType: "application/json", Form: [][2]string{{"name", "\x00"}}}, nil},
		{"nested JSON", Inputs{ContentType: "application/merge-patch+json",
			Body: []byte(`{"thresholds":[{"emails":["ok","b\u0000"]}],"k\u0001":1}`)}, []string{"body.k", "body.thresholds[0].emails[1]"}},
		{"JSON without escapes is not decoded", Inputs{ContentType: "application/json", Body: []byte(`{"name":"plain"}`)}, nil},
	} {
		var got []string
		for _, e := range InputErrors(tc.in) {
			if e.Message != MsgControlChars {
				t.Errorf("%s: message %q", tc.name, e.Message)
			}
			got = append(got, e.Location)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDecodePathParams: values are decoded as net/http decodes a path
// (so a NUL or an invalid byte sent escaped reaches InputErrors as
// itself); a bad escape is named and left out.
func TestDecodePathParams(t *testing.T) {
	got, errs := DecodePathParams(map[string]string{"id": "%00", "name": "a%2Fb%20c", "bad": "%zz", "bytes": "%ff", "plain": "100"})
	want := map[string]string{"id": "\x00", "name": "a/b c", "bytes": "\xff", "plain": "100"}
	if !maps.Equal(got, want) {
		t.Errorf("decoded %q, want %q", got, want)
	}
	if len(errs) != 1 || errs[0].Location != "path.bad" || errs[0].Message != MsgBadEscape {
		t.Errorf("errors %+v, want path.bad", errs)
	}
	var locs []string
	for _, e := range InputErrors(Inputs{PathParams: got}) {
		locs = append(locs, e.Location)
	}
	if !slices.Equal(locs, []string{"path.bytes", "path.id"}) {
		t.Errorf("InputErrors of the decoded values name %v, want path.bytes and path.id", locs)
	}
}

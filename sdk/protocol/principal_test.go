package protocol

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

func TestPrincipalRoundTrip(t *testing.T) {
	for _, p := range []*pluginv1.Principal{
		{Id: "u1", Email: "a@example.com", Name: "Ann Æsir", Roles: []string{"reader", "auditor"}, Kind: "user", TenantIds: []string{"t1", "t2"}},
		{Id: "k9", IsAdmin: true, Kind: "apikey"},
		{},
	} {
		enc, err := EncodePrincipal(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(enc, "\r\n:= +/") {
			t.Errorf("encoded principal %q is not a safe header value", enc)
		}
		got, err := DecodePrincipal(enc)
		if err != nil {
			t.Fatalf("decode %q: %v", enc, err)
		}
		if !proto.Equal(got, p) {
			t.Errorf("round trip = %v, want %v", got, p)
		}
	}
	for _, bad := range []string{"not base64!", "AAEC"} {
		if p, err := DecodePrincipal(bad); err == nil {
			t.Errorf("decode %q = %v, want an error", bad, p)
		}
	}
}

func TestSetSocketHeaders(t *testing.T) {
	p := &pluginv1.Principal{Id: "u1", Kind: "user"}
	got := map[string]string{}
	set := func(k, v string) { got[k] = v }
	if err := SetSocketHeaders(set, "tok", "req-1", "/x/{id}", p); err != nil {
		t.Fatal(err)
	}
	if got[HeaderToken] != "tok" || got[HeaderRequestID] != "req-1" || got[HeaderRoute] != "/x/{id}" || len(got) != 4 {
		t.Errorf("headers = %v", got)
	}
	if dec, err := DecodePrincipal(got[HeaderPrincipal]); err != nil || !proto.Equal(dec, p) {
		t.Errorf("principal header decodes to %v, %v", dec, err)
	}
	anon := map[string]string{}
	if err := SetSocketHeaders(func(k, v string) { anon[k] = v }, "tok", "req-2", "/x", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := anon[HeaderPrincipal]; ok || len(anon) != 3 {
		t.Errorf("anonymous headers = %v", anon)
	}
}

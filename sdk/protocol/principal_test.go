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

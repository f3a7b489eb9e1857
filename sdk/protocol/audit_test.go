package protocol_test

import (
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestCheckAuditAction(t *testing.T) {
	for action, ok := range map[string]bool{
		"evidence.file.success": true,
		"a_1.b_2.c_3":           true,
		"":                      false,
		"evidence.file":         false,
		"evidence.file.now.ok":  false,
		"Evidence.file.success": false,
		"evidence..success":     false,
		"evidence.file-x.ok":    false,
	} {
		if err := protocol.CheckAuditAction(action); (err == nil) != ok {
			t.Errorf("CheckAuditAction(%q) = %v, want ok %v", action, err, ok)
		}
	}
}

func TestCheckAuditStatus(t *testing.T) {
	for status, ok := range map[string]bool{"success": true, "failure": true, "warning": true, "": false, "Success": false, "ok": false} {
		if err := protocol.CheckAuditStatus(status); (err == nil) != ok {
			t.Errorf("CheckAuditStatus(%q) = %v, want ok %v", status, err, ok)
		}
	}
}

func TestCheckMarkFresh(t *testing.T) {
	for _, tc := range []struct {
		tenant, domain string
		ok             bool
	}{{"t1", "costs", true}, {"", "costs", false}, {"t1", "", false}} {
		err := protocol.CheckMarkFresh(&pluginv1.MarkFreshRequest{TenantId: tc.tenant, Domain: tc.domain})
		if (err == nil) != tc.ok {
			t.Errorf("%q %q: %v, want ok %v", tc.tenant, tc.domain, err, tc.ok)
		}
	}
}

func TestAuditDetails(t *testing.T) {
	for _, raw := range []string{"", "{}", `{"file":"a.pdf","size":3}`} {
		d, err := protocol.AuditDetails([]byte(raw))
		if err != nil || d == nil {
			t.Errorf("%q: %v, %v", raw, d, err)
		}
	}
	if d, _ := protocol.AuditDetails([]byte(`{"size":3}`)); d["size"] != 3.0 {
		t.Errorf("decoded %v", d)
	}
	for _, raw := range []string{"null", "[1]", `"text"`, "3", "{", `{"a":1}x`} {
		if _, err := protocol.AuditDetails([]byte(raw)); err == nil || err.Error() != "details must be a JSON object" {
			t.Errorf("%q: err %v", raw, err)
		}
	}
}

package exemptions_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/exemptions"
)

// TestExemptionRoutes: an exemption is created in the caller's tenant,
// read, listed with its filters, changed and deleted, each change audited
// with its actor; an exact duplicate of an active one is a 409; another
// tenant's user gets 404 for it and 403 naming its tenant.
func TestExemptionRoutes(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		// Brand A's user sees one tenant and may leave tenant_id out.
		v := f.create(userA, f.findingBody(func(b map[string]any) {
			delete(b, "tenant_id")
			b["reason"] = "Enforced <b>by</b> policy"
		}))
		if v.TenantID != tenantA || v.Scope != exemptions.ScopeFinding || v.ResourceID == nil || *v.ResourceID != strings.ToLower(vault) ||
			*v.PolicyDefinitionID != strings.ToLower(purge) || v.FrameworkID != nil || v.Reason != "Enforced by policy" ||
			v.Status != exemptions.StatusActive || v.CreatedBy != userA.ID || !v.ExpiresAt.Equal(f.clock.Now().Add(24*time.Hour)) {
			t.Errorf("created %+v", v)
		}
		audit := f.h.AuditEntries()
		if len(audit) != 1 || audit[0].Action != "compliance_exemption.create.success" || audit[0].Principal.ID != userA.ID ||
			audit[0].TenantID != tenantA || audit[0].ResourceType != "compliance_exemption" || audit[0].Details["scope"] != "finding" ||
			audit[0].Details["reason"] != "Enforced by policy" {
			t.Errorf("audit %+v", audit)
		}

		// The same target in another case is a duplicate; in Brand B it is not.
		f.do(userA, http.MethodPost, exemptionsAt, f.findingBody(func(b map[string]any) { b["resource_id"] = strings.ToUpper(vault) })).
			want(t, "duplicate", http.StatusConflict)
		other := f.create(admin, f.findingBody(func(b map[string]any) { b["tenant_id"] = tenantB }))
		ctl := f.create(admin, f.findingBody(func(b map[string]any) {
			delete(b, "resource_id")
			delete(b, "policy_definition_id")
			b["scope"], b["framework_id"], b["control_id"] = "control", "soc2", "CC6.1"
		}))
		if *ctl.FrameworkID != "soc2" || *ctl.ControlID != "CC6.1" || ctl.ResourceID != nil {
			t.Errorf("control exemption %+v", ctl)
		}

		var got exemptions.View
		f.do(userA, http.MethodGet, exemptionAt(v.ID), nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.ID != v.ID || got.Reason != v.Reason {
			t.Errorf("read %+v", got)
		}
		for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPatch} {
			var body any
			if m == http.MethodPatch {
				body = map[string]any{"reason": "mine now"}
			}
			if r := f.do(userB, m, exemptionAt(v.ID), body); r.status != http.StatusNotFound || strings.Contains(string(r.body), "Enforced") {
				t.Errorf("%s of Brand A's exemption as Brand B's user: %d %s", m, r.status, r.body)
			}
		}
		f.do(userB, http.MethodGet, exemptionsAt+"?tenant_ids="+tenantA, nil).want(t, "list naming Brand A as Brand B's user", http.StatusForbidden)
		f.do(userB, http.MethodPost, exemptionsAt, f.findingBody()).want(t, "create in Brand A as Brand B's user", http.StatusForbidden)

		var page exemptions.Page
		f.do(admin, http.MethodGet, exemptionsAt+"?limit=2", nil).want(t, "list", http.StatusOK).decode(t, &page)
		if page.Total != 3 || len(page.Items) != 2 || page.Items[0].ID != ctl.ID || page.Items[1].ID != other.ID {
			t.Errorf("admin's list %+v", page)
		}
		for q, want := range map[string]int{"?scope=control": 1, "?scope=resource": 0, "?tenant_ids=" + tenantB: 1, "?status=active": 3, "?status=expired": 0} {
			f.do(admin, http.MethodGet, exemptionsAt+q, nil).want(t, q, http.StatusOK).decode(t, &page)
			if page.Total != want {
				t.Errorf("%s: %d, want %d", q, page.Total, want)
			}
		}
		f.do(userA, http.MethodGet, exemptionsAt, nil).want(t, "Brand A's list", http.StatusOK).decode(t, &page)
		if page.Total != 2 {
			t.Errorf("Brand A's user lists %d, want its 2", page.Total)
		}

		// PATCH extends the expiry and changes the reason.
		later := f.clock.Now().Add(30 * 24 * time.Hour)
		f.do(userA, http.MethodPatch, exemptionAt(v.ID), map[string]any{"expires_at": later, "reason": "Extended"}).
			want(t, "patch", http.StatusOK).decode(t, &got)
		if !got.ExpiresAt.Equal(later) || got.Reason != "Extended" || got.Owner != v.Owner {
			t.Errorf("patched %+v", got)
		}
		audit = f.h.AuditEntries()
		last := audit[len(audit)-1]
		if last.Action != "compliance_exemption.update.success" || last.Details["before"].(map[string]any)["reason"] != "Enforced by policy" {
			t.Errorf("update audit %+v", last)
		}

		f.do(userA, http.MethodDelete, exemptionAt(v.ID), nil).want(t, "delete", http.StatusNoContent)
		f.do(userA, http.MethodGet, exemptionAt(v.ID), nil).want(t, "get deleted", http.StatusNotFound)
		f.do(userA, http.MethodDelete, exemptionAt(v.ID), nil).want(t, "delete again", http.StatusNotFound)
		audit = f.h.AuditEntries()
		if last := audit[len(audit)-1]; last.Action != "compliance_exemption.delete.success" || last.ResourceID != itoa(v.ID) {
			t.Errorf("delete audit %+v", last)
		}
		// Deleted, the same finding may be exempted again.
		f.create(userA, f.findingBody())
	})
}

func itoa(id int64) string { return exemptionAt(id)[len(exemptionsAt)+1:] }

// TestExemptionInvalid: every bad input is a 422 naming the member, and
// nothing is stored or audited.
func TestExemptionInvalid(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		set := func(k string, v any) func(map[string]any) { return func(b map[string]any) { b[k] = v } }
		del := func(keys ...string) func(map[string]any) {
			return func(b map[string]any) {
				for _, k := range keys {
					delete(b, k)
				}
			}
		}
		now := f.clock.Now()
		for _, c := range []struct {
			what   string
			change []func(map[string]any)
			loc    string
		}{
			{"no scope", []func(map[string]any){del("scope")}, "body.scope"},
			{"unknown scope", []func(map[string]any){set("scope", "everything")}, "body.scope"},
			{"finding without policy", []func(map[string]any){del("policy_definition_id")}, "body.policy_definition_id"},
			{"resource with a policy", []func(map[string]any){set("scope", "resource")}, "body.policy_definition_id"},
			{"policy with a resource", []func(map[string]any){set("scope", "policy")}, "body.resource_id"},
			{"control without framework", []func(map[string]any){set("scope", "control"), del("resource_id", "policy_definition_id"), set("control_id", "CC6.1")}, "body.framework_id"},
			{"control of an unknown framework", []func(map[string]any){set("scope", "control"), del("resource_id", "policy_definition_id"), set("framework_id", "nope"), set("control_id", "CC6.1")}, "body.framework_id"},
			{"unknown control", []func(map[string]any){set("scope", "control"), del("resource_id", "policy_definition_id"), set("framework_id", "soc2"), set("control_id", "ZZ.9")}, "body.control_id"},
			{"resource id not ARM", []func(map[string]any){set("resource_id", "kv01")}, "body.resource_id"},
			{"resource id with a control character", []func(map[string]any){set("resource_id", vault+"\x01")}, "body.resource_id"},
			{"resource id with a space", []func(map[string]any){set("resource_id", vault+" x")}, "body.resource_id"},
			{"resource id too long", []func(map[string]any){set("resource_id", vault+strings.Repeat("x", 1024))}, "body.resource_id"},
			{"policy id of a management group's definition, with a space", []func(map[string]any){set("policy_definition_id",
				"/providers/Microsoft.Management/managementGroups/mg/providers/Microsoft.Authorization/policyDefinitions/a b")}, "body.policy_definition_id"},
			{"policy id not a definition", []func(map[string]any){set("policy_definition_id", "/providers/Microsoft.Authorization/policyAssignments/x")}, "body.policy_definition_id"},
			{"no reason", []func(map[string]any){del("reason")}, "body.reason"},
			{"empty reason", []func(map[string]any){set("reason", "  ")}, "body.reason"},
			{"reason only markup", []func(map[string]any){set("reason", "<script>x</script>")}, "body.reason"},
			{"reason too long", []func(map[string]any){set("reason", strings.Repeat("r", 2001))}, "body.reason"},
			{"no owner", []func(map[string]any){del("owner")}, "body.owner"},
			{"owner on two lines", []func(map[string]any){set("owner", "a\nb")}, "body.owner"},
			{"owner too long", []func(map[string]any){set("owner", strings.Repeat("o", 255))}, "body.owner"},
			{"no expiry", []func(map[string]any){del("expires_at")}, "body.expires_at"},
			{"expiry not a time", []func(map[string]any){set("expires_at", "tomorrow")}, "body.expires_at"},
			{"expiry now", []func(map[string]any){set("expires_at", now.Format(time.RFC3339))}, "body.expires_at"},
			{"expiry past", []func(map[string]any){set("expires_at", now.Add(-time.Hour).Format(time.RFC3339))}, "body.expires_at"},
			{"expiry beyond a year", []func(map[string]any){set("expires_at", now.Add(367*24*time.Hour).Format(time.RFC3339))}, "body.expires_at"},
			{"unknown member", []func(map[string]any){set("severity", "High")}, "body.severity"},
		} {
			f.do(admin, http.MethodPost, exemptionsAt, f.findingBody(c.change...)).wantInvalid(t, c.what, c.loc)
		}
		f.do(admin, http.MethodPost, exemptionsAt, f.findingBody(del("tenant_id"))).wantInvalid(t, "a caller of two tenants naming none", "body.tenant_id")
		f.do(admin, http.MethodPost, exemptionsAt, "{").wantInvalid(t, "not JSON", "body")
		for q, loc := range map[string]string{"?scope=all": "query.scope", "?status=lapsed": "query.status", "?limit=0": "query.limit", "?offset=-1": "query.offset"} {
			f.do(admin, http.MethodGet, exemptionsAt+q, nil).wantInvalid(t, q, loc)
		}
		f.do(admin, http.MethodGet, exemptionsAt+"/0", nil).wantInvalid(t, "id 0", "path.id")

		v := f.create(admin, f.findingBody())
		for _, c := range []struct {
			what string
			body any
			loc  string
		}{
			{"nothing to change", map[string]any{}, "body"},
			{"empty reason", map[string]any{"reason": ""}, "body.reason"},
			{"past expiry", map[string]any{"expires_at": now.Add(-time.Minute)}, "body.expires_at"},
			{"expiry beyond a year", map[string]any{"expires_at": now.Add(400 * 24 * time.Hour)}, "body.expires_at"},
			{"scope", map[string]any{"scope": "resource"}, "body.scope"},
		} {
			f.do(admin, http.MethodPatch, exemptionAt(v.ID), c.body).wantInvalid(t, "patch: "+c.what, c.loc)
		}
		var got exemptions.View
		f.do(admin, http.MethodGet, exemptionAt(v.ID), nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.Reason != v.Reason || !got.ExpiresAt.Equal(v.ExpiresAt) || !got.UpdatedAt.Equal(v.UpdatedAt) {
			t.Errorf("after refused changes %+v, want %+v", got, v)
		}
		var page exemptions.Page
		f.do(admin, http.MethodGet, exemptionsAt, nil).want(t, "list", http.StatusOK).decode(t, &page)
		if audit := f.h.AuditEntries(); page.Total != 1 || len(audit) != 1 {
			t.Errorf("%d stored and %d audited after the refused inputs, want the one created", page.Total, len(audit))
		}
	})
}

// TestExemptionExpiry: an exemption lapses at expires_at with no call
// (listed as expired, no longer active, no longer changeable); the expiry
// job records each lapse in the audit log once, as the job.
func TestExemptionExpiry(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		short := f.create(admin, f.findingBody(func(b map[string]any) { b["expires_at"] = f.clock.Now().Add(time.Minute) }))
		long := f.create(admin, f.findingBody(func(b map[string]any) { b["scope"] = "resource"; delete(b, "policy_definition_id") }))
		if n, _, err := f.h.RunJob(ctx, exemptions.ExpiryJobType); n != 0 || err != nil {
			t.Fatalf("expiry before any lapse: %d, %v", n, err)
		}
		f.clock.Advance(time.Minute)
		var got exemptions.View
		f.do(admin, http.MethodGet, exemptionAt(short.ID), nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.Status != exemptions.StatusExpired || got.LapseRecordedAt != nil {
			t.Errorf("lapsed %+v", got)
		}
		var page exemptions.Page
		f.do(admin, http.MethodGet, exemptionsAt+"?status=expired", nil).want(t, "expired", http.StatusOK).decode(t, &page)
		if page.Total != 1 || page.Items[0].ID != short.ID {
			t.Errorf("expired %+v", page)
		}
		active, err := f.store.Active(ctx, []string{tenantA, tenantB}, f.clock.Now())
		if err != nil || len(active) != 1 || active[0].ID != long.ID {
			t.Errorf("active %+v, %v", active, err)
		}
		f.do(admin, http.MethodPatch, exemptionAt(short.ID), map[string]any{"expires_at": f.clock.Now().Add(time.Hour)}).
			want(t, "extend a lapsed exemption", http.StatusConflict)

		before := len(f.h.AuditEntries())
		if n, _, err := f.h.RunJob(ctx, exemptions.ExpiryJobType); n != 1 || err != nil {
			t.Fatalf("expiry: %d, %v", n, err)
		}
		if n, _, err := f.h.RunJob(ctx, exemptions.ExpiryJobType); n != 0 || err != nil {
			t.Fatalf("expiry again: %d, %v", n, err)
		}
		audit := f.h.AuditEntries()[before:]
		if len(audit) != 1 || audit[0].Action != "compliance_exemption.expire.success" || audit[0].ResourceID != itoa(short.ID) ||
			audit[0].TenantID != tenantA || !audit[0].Principal.Anonymous() || audit[0].Details["scope"] != "finding" {
			t.Errorf("expiry audit %+v", audit)
		}
		f.do(admin, http.MethodGet, exemptionAt(short.ID), nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.LapseRecordedAt == nil || !got.LapseRecordedAt.Equal(f.clock.Now()) {
			t.Errorf("lapse recorded %+v", got.LapseRecordedAt)
		}
		// Lapsed, the same target may be exempted again.
		f.create(admin, f.findingBody())
	})
}

package evidence_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
)

// TestEvidenceLifecycle: a user of tenant A starts evidence, works on it
// and submits it; an admin rejects it with a reason, the user reworks and
// submits it again, and the admin accepts it for 30 days. Every change is
// audited with the caller and the move it made.
func TestEvidenceLifecycle(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01", func(b map[string]any) {
			b["owner"] = "Ada <b>Lovelace</b>"
			b["due_date"] = "2026-12-31"
			b["notes"] = "Pen test report\nfrom the vendor"
			b["links"] = []string{"https://vendor.example/report?id=1", "http://intranet.example/sec"}
		})
		if v.Status != "not_started" || v.TenantID != tenantA || *v.Owner != "Ada Lovelace" || *v.DueDate != "2026-12-31" ||
			len(v.Links) != 2 || v.CreatedBy != userA.ID || v.FileCount != 0 {
			t.Fatalf("created: %+v", v)
		}
		v = f.patch(userA, v.ID, map[string]any{"status": "in_progress", "owner": nil})
		if v.Status != "in_progress" || v.Owner != nil || *v.Notes != "Pen test report\nfrom the vendor" {
			t.Errorf("in progress, owner cleared, notes kept: %+v", v)
		}
		v = f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		f.clock.Advance(time.Hour)
		var r evidence.View
		f.do(admin, http.MethodPost, evidenceAt+"/"+v.ID+"/review", map[string]any{"decision": "rejected", "reason": "The report is a year old"}).
			want(t, "reject", http.StatusOK).decode(t, &r)
		if r.Status != "rejected" || *r.ReviewReason != "The report is a year old" || *r.ReviewedBy != admin.ID || r.ExpiresAt != nil {
			t.Errorf("rejected: %+v", r)
		}
		v = f.patch(userA, v.ID, map[string]any{"status": "in_progress", "notes": "The new report"})
		v = f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		f.do(admin, http.MethodPost, evidenceAt+"/"+v.ID+"/review", map[string]any{"decision": "accepted", "reason": "Current", "validity_days": 30}).
			want(t, "accept", http.StatusOK).decode(t, &r)
		if want := f.clock.Now().AddDate(0, 0, 30); r.Status != "accepted" || r.ExpiresAt == nil || !r.ExpiresAt.Equal(want) {
			t.Errorf("accepted for 30 days from %v: %+v", f.clock.Now(), r)
		}
		var got evidence.Detail
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID, nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.Status != "accepted" || *got.Notes != "The new report" || got.Files == nil || len(got.Files) != 0 {
			t.Errorf("get: %+v", got)
		}

		var moves []string
		for _, e := range f.audits("partner_evidence.") {
			if e.TenantID != tenantA || e.ResourceType != "partner_evidence" || e.ResourceID != v.ID || e.Status != "success" {
				t.Errorf("audit entry %+v", e)
			}
			moves = append(moves, fmt.Sprintf("%s %s %v", e.Principal.ID, e.Action, e.Details["status"]))
		}
		want := []string{
			"user-a partner_evidence.create.success not_started",
			"user-a partner_evidence.update.success in_progress",
			"user-a partner_evidence.update.success submitted",
			"admin-1 partner_evidence.review.success <nil>",
			"user-a partner_evidence.update.success in_progress",
			"user-a partner_evidence.update.success submitted",
			"admin-1 partner_evidence.review.success <nil>",
		}
		if !slices.Equal(moves, want) {
			t.Errorf("audited:\n%s\nwant\n%s", strings.Join(moves, "\n"), strings.Join(want, "\n"))
		}
		reviews := f.audits("partner_evidence.review")
		if len(reviews) != 2 || reviews[0].Details["decision"] != "rejected" || reviews[0].Details["reason"] != "The report is a year old" ||
			reviews[1].Details["decision"] != "accepted" || reviews[1].Details["expires_at"] == nil {
			t.Errorf("review entries: %+v", reviews)
		}
	})
}

// TestTransitions: every move the lifecycle lacks is a 409 naming both
// statuses, a status a PATCH may not set (one a review or the schedule
// sets) is a 422, and evidence under review keeps its content.
func TestTransitions(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		at := evidenceAt + "/" + v.ID
		r := f.do(userA, http.MethodPatch, at, map[string]any{"status": "submitted"})
		r.want(t, "not_started -> submitted", http.StatusConflict)
		if !strings.Contains(string(r.body), "not_started cannot be moved to submitted") {
			t.Errorf("409 does not name the move: %s", r.body)
		}
		for _, s := range []string{"accepted", "rejected", "expired", "done"} {
			f.do(userA, http.MethodPatch, at, map[string]any{"status": s}).wantInvalid(t, "PATCH to "+s, "body.status", "one of \"not_started, in_progress, submitted\"")
		}
		// A null member that is not nullable is left out, as huma binds it.
		var same evidence.View
		f.do(userA, http.MethodPatch, at, map[string]any{"status": nil}).want(t, "null status", http.StatusOK).decode(t, &same)
		if same.Status != "not_started" {
			t.Errorf("a null status moved the evidence to %s", same.Status)
		}

		v = f.patch(userA, v.ID, map[string]any{"status": "in_progress"})
		v = f.patch(userA, v.ID, map[string]any{"status": "not_started"})
		if v.Status != "not_started" {
			t.Errorf("back to not_started: %s", v.Status)
		}
		f.patch(userA, v.ID, map[string]any{"status": "in_progress"})
		f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		// Submitted: frozen, but may be withdrawn with a change.
		f.do(userA, http.MethodPatch, at, map[string]any{"notes": "more"}).want(t, "change submitted evidence", http.StatusConflict)
		f.do(userA, http.MethodPatch, at, map[string]any{"status": "not_started"}).want(t, "submitted -> not_started", http.StatusConflict)
		f.do(userA, http.MethodPatch, at, map[string]any{"status": "submitted", "notes": nil}).want(t, "same status, no change", http.StatusOK)
		v = f.patch(userA, v.ID, map[string]any{"status": "in_progress", "notes": "withdrawn to add this"})
		if v.Status != "in_progress" || *v.Notes != "withdrawn to add this" {
			t.Errorf("withdrawn: %+v", v)
		}
		f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		f.do(admin, http.MethodPost, at+"/review", map[string]any{"decision": "accepted", "reason": "ok"}).want(t, "accept", http.StatusOK)
		// Accepted: frozen, and only the schedule moves it.
		f.do(userA, http.MethodPatch, at, map[string]any{"owner": "someone"}).want(t, "change accepted evidence", http.StatusConflict)
		f.do(userA, http.MethodPatch, at, map[string]any{"status": "in_progress"}).want(t, "accepted -> in_progress", http.StatusConflict)
		f.do(admin, http.MethodPost, at+"/review", map[string]any{"decision": "rejected", "reason": "again"}).want(t, "review accepted evidence", http.StatusConflict)

		w := f.create(userA, tenantA, "SEC-02")
		f.do(admin, http.MethodPost, evidenceAt+"/"+w.ID+"/review", map[string]any{"decision": "accepted", "reason": "ok"}).
			want(t, "review evidence not submitted", http.StatusConflict)
	})
}

// TestReviewNeedsAnAdmin: a standard user who sees the tenant is refused
// a review with 403, and the evidence stays submitted.
func TestReviewNeedsAnAdmin(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.submitted("SEC-01")
		f.do(userA, http.MethodPost, evidenceAt+"/"+v.ID+"/review", map[string]any{"decision": "accepted", "reason": "mine"}).
			want(t, "a user reviews", http.StatusForbidden)
		var got evidence.Detail
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID, nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.Status != "submitted" || got.ReviewedBy != nil {
			t.Errorf("after a refused review: %+v", got)
		}
		if n := len(f.audits("partner_evidence.review")); n != 0 {
			t.Errorf("%d review entries", n)
		}
	})
}

// TestReviewBody: each bad member of a review is a 422 naming it, and a
// reason is required for either decision.
func TestReviewBody(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.submitted("SEC-01")
		at := evidenceAt + "/" + v.ID + "/review"
		for _, c := range []struct {
			name string
			body any
			loc  string
			msg  string
		}{
			{"no reason", map[string]any{"decision": "accepted"}, "body.reason", "required"},
			{"empty reason", map[string]any{"decision": "rejected", "reason": "  "}, "body.reason", "must not be empty"},
			{"markup only", map[string]any{"decision": "rejected", "reason": "<b></b>"}, "body.reason", "must not be empty"},
			{"long reason", map[string]any{"decision": "rejected", "reason": strings.Repeat("x", 2001)}, "body.reason", "<= 2000"},
			{"no decision", map[string]any{"reason": "x"}, "body.decision", "required"},
			{"bad decision", map[string]any{"decision": "maybe", "reason": "x"}, "body.decision", "accepted, rejected"},
			{"validity zero", map[string]any{"decision": "accepted", "reason": "x", "validity_days": 0}, "body.validity_days", ">= 1"},
			{"validity long", map[string]any{"decision": "accepted", "reason": "x", "validity_days": 3651}, "body.validity_days", "<= 3650"},
			{"validity text", map[string]any{"decision": "accepted", "reason": "x", "validity_days": "30"}, "body.validity_days", "expected integer"},
			{"validity rejected", map[string]any{"decision": "rejected", "reason": "x", "validity_days": 30}, "body.validity_days", "only for an acceptance"},
			{"extra", map[string]any{"decision": "rejected", "reason": "x", "status": "accepted"}, "body.status", "unexpected property"},
			{"not an object", `["accepted"]`, "body", "expected object"},
		} {
			f.do(admin, http.MethodPost, at, c.body).wantInvalid(t, c.name, c.loc, c.msg)
		}
		// Accepting evidence whose own expiry has passed needs a new one.
		w := f.create(userA, tenantA, "SEC-02", func(b map[string]any) {
			b["status"] = "in_progress"
			b["expires_at"] = f.clock.Now().Add(time.Hour).Format(time.RFC3339)
		})
		f.patch(userA, w.ID, map[string]any{"status": "submitted"})
		f.clock.Advance(2 * time.Hour)
		f.do(admin, http.MethodPost, evidenceAt+"/"+w.ID+"/review", map[string]any{"decision": "accepted", "reason": "ok"}).
			wantInvalid(t, "accept past its expiry", "body.validity_days", "expires_at has passed")
		f.do(admin, http.MethodPost, evidenceAt+"/"+w.ID+"/review", map[string]any{"decision": "accepted", "reason": "ok", "validity_days": 1}).
			want(t, "accept with a new validity", http.StatusOK)
	})
}

// TestCreateBody: every bad member and every bound of a create body is a
// 422 naming it; nothing is stored.
func TestCreateBody(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		links := func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("https://docs.example/%d", i)
			}
			return out
		}
		base := func(change map[string]any) map[string]any {
			b := map[string]any{"tenant_id": tenantA, "requirement_id": "SEC-01"}
			for k, v := range change {
				b[k] = v
			}
			return b
		}
		for _, c := range []struct {
			name string
			body any
			loc  string
			msg  string
		}{
			{"no requirement", map[string]any{"tenant_id": tenantA}, "body.requirement_id", "required"},
			{"unknown requirement", base(map[string]any{"requirement_id": "NOPE-9"}), "body.requirement_id", "not a requirement"},
			{"long requirement", base(map[string]any{"requirement_id": strings.Repeat("R", 101)}), "body.requirement_id", "<= 100"},
			{"requirement number", base(map[string]any{"requirement_id": 7}), "body.requirement_id", "expected string"},
			{"submitted at once", base(map[string]any{"status": "submitted"}), "body.status", "one of \"not_started, in_progress\""},
			{"accepted at once", base(map[string]any{"status": "accepted"}), "body.status", "one of \"not_started, in_progress\""},
			{"long owner", base(map[string]any{"owner": strings.Repeat("o", 256)}), "body.owner", "<= 255"},
			{"owner with a tab", base(map[string]any{"owner": "a\tb"}), "body.owner", "control characters"},
			{"long notes", base(map[string]any{"notes": strings.Repeat("n", 4001)}), "body.notes", "<= 4000"},
			{"bad due date", base(map[string]any{"due_date": "31/12/2026"}), "body.due_date", "date"},
			{"impossible due date", base(map[string]any{"due_date": "2026-02-30"}), "body.due_date", "date"},
			{"bad expiry", base(map[string]any{"expires_at": "tomorrow"}), "body.expires_at", "RFC 3339"},
			{"links not a list", base(map[string]any{"links": "https://a.example"}), "body.links", "array"},
			{"too many links", base(map[string]any{"links": links(21)}), "body.links", "<= 20"},
			{"link not a string", base(map[string]any{"links": []any{1}}), "body.links[0]", "expected string"},
			{"relative link", base(map[string]any{"links": []string{"/docs/x"}}), "body.links[0]", "absolute"},
			{"javascript link", base(map[string]any{"links": []string{"https://ok.example", "javascript:alert(1)"}}), "body.links[1]", "http or https"},
			{"file link", base(map[string]any{"links": []string{"file:///etc/passwd"}}), "body.links[0]", "http or https"},
			{"ftp link", base(map[string]any{"links": []string{"ftp://files.example/x"}}), "body.links[0]", "http or https"},
			{"link without host", base(map[string]any{"links": []string{"https:///x"}}), "body.links[0]", "host"},
			{"link with password", base(map[string]any{"links": []string{"https://u:p@docs.example/"}}), "body.links[0]", "password"},
			{"link with space", base(map[string]any{"links": []string{"https://docs.example/a b"}}), "body.links[0]", "without spaces"},
			{"long link", base(map[string]any{"links": []string{"https://docs.example/" + strings.Repeat("a", 2030)}}), "body.links[0]", "<= 2048"},
			{"repeated link", base(map[string]any{"links": []string{"https://a.example/", "https://a.example/"}}), "body.links[1]", "repeats body.links[0]"},
			{"service field", base(map[string]any{"created_by": "me"}), "body.created_by", "unexpected property"},
			{"unknown field", base(map[string]any{"colour": "red"}), "body.colour", "unexpected property"},
			{"not an object", `"SEC-01"`, "body", "expected object"},
			{"bad tenant", base(map[string]any{"tenant_id": 5}), "body.tenant_id", "expected string"},
		} {
			f.do(userA, http.MethodPost, evidenceAt, c.body).wantInvalid(t, c.name, c.loc, c.msg)
		}
		f.do(userA, http.MethodPost, evidenceAt, `{"requirement_id":"SEC-01","notes":"`+strings.Repeat("x", 1<<20)+`"}`).
			want(t, "body over 1 MiB", http.StatusRequestEntityTooLarge)
		// An admin who sees two tenants names one.
		f.do(admin, http.MethodPost, evidenceAt, map[string]any{"requirement_id": "SEC-01"}).wantInvalid(t, "admin without tenant", "body.tenant_id", "2 tenants")
		var list evidence.List
		f.do(admin, http.MethodGet, evidenceAt, nil).want(t, "list", http.StatusOK).decode(t, &list)
		if list.Total != 0 {
			t.Errorf("refused bodies stored %d records", list.Total)
		}
		// Right at the bounds is fine; a user of one tenant may leave it out.
		v := f.create(userA, "", "SEC-01", func(b map[string]any) {
			delete(b, "tenant_id")
			b["owner"] = strings.Repeat("o", 255)
			b["notes"] = strings.Repeat("n", 4000)
			b["links"] = links(20)
		})
		if v.TenantID != tenantA || len(v.Links) != 20 {
			t.Errorf("at the bounds: %+v", v)
		}
		f.do(userA, http.MethodPost, evidenceAt, map[string]any{"requirement_id": "SEC-01"}).want(t, "a second record", http.StatusConflict)
	})
}

// TestPatchBody: a PATCH is checked like a create, cannot move the
// evidence to another tenant or requirement, and keeps what it leaves out.
func TestPatchBody(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01", func(b map[string]any) { b["owner"] = "Ada"; b["links"] = []string{"https://a.example"} })
		at := evidenceAt + "/" + v.ID
		f.do(userA, http.MethodPatch, at, map[string]any{"tenant_id": tenantB}).wantInvalid(t, "move tenant", "body.tenant_id", "cannot be changed")
		f.do(userA, http.MethodPatch, at, map[string]any{"requirement_id": "SEC-02"}).wantInvalid(t, "move requirement", "body.requirement_id", "cannot be changed")
		f.do(userA, http.MethodPatch, at, map[string]any{"links": []string{"mailto:a@b.example"}}).wantInvalid(t, "mail link", "body.links[0]", "http or https")
		f.do(userA, http.MethodPatch, at, map[string]any{"due_date": 20261231}).wantInvalid(t, "due date number", "body.due_date", "string")
		f.do(userA, http.MethodPatch, at, map[string]any{"id": "x"}).wantInvalid(t, "id", "body.id", "unexpected property")
		got := f.patch(userA, v.ID, map[string]any{"tenant_id": tenantA, "requirement_id": "SEC-01", "notes": "<script>alert(1)</script>checked"})
		if *got.Owner != "Ada" || len(got.Links) != 1 || *got.Notes != "checked" || got.UpdatedAt.Equal(v.UpdatedAt) {
			t.Errorf("after a PATCH of notes: %+v", got)
		}
		got = f.patch(userA, v.ID, map[string]any{"links": nil})
		if got.Links == nil || len(got.Links) != 0 {
			t.Errorf("links cleared: %#v", got.Links)
		}
	})
}

// TestTenantIsolation: a user of tenant B gets 404 for tenant A's
// evidence on every object route, never its contents; naming tenant A in
// a list or a create is a 403.
func TestTenantIsolation(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01", func(b map[string]any) { b["notes"] = "secret-of-a"; b["status"] = "in_progress" })
		at := evidenceAt + "/" + v.ID
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, at, nil},
			{http.MethodPatch, at, map[string]any{"notes": "mine now"}},
			{http.MethodGet, at + "/files", nil},
		} {
			r := f.do(userB, c.method, c.path, c.body)
			r.want(t, "user B: "+c.method+" "+c.path, http.StatusNotFound)
			if strings.Contains(string(r.body), "secret-of-a") || strings.Contains(string(r.body), tenantA) {
				t.Errorf("%s %s leaks: %s", c.method, c.path, r.body)
			}
		}
		f.upload(userB, v.ID, part{field: "file", fileName: "x.txt", content: []byte("hello")}).want(t, "user B uploads", http.StatusNotFound)
		f.do(userB, http.MethodGet, evidenceAt+"?tenant_ids="+tenantA, nil).want(t, "user B lists A", http.StatusForbidden)
		f.do(userB, http.MethodPost, evidenceAt, map[string]any{"tenant_id": tenantA, "requirement_id": "SEC-02"}).want(t, "user B creates in A", http.StatusForbidden)
		f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		f.do(sdk.Principal{ID: "admin-b", IsAdmin: true, Kind: "user", TenantIDs: []string{tenantB}}, http.MethodPost, at+"/review",
			map[string]any{"decision": "accepted", "reason": "x"}).want(t, "an admin scoped to B reviews A", http.StatusNotFound)
		var list evidence.List
		f.do(userB, http.MethodGet, evidenceAt, nil).want(t, "user B lists", http.StatusOK).decode(t, &list)
		if list.Total != 0 || len(list.Items) != 0 {
			t.Errorf("user B's list: %+v", list)
		}
		var got evidence.Detail
		f.do(userA, http.MethodGet, at, nil).want(t, "get", http.StatusOK).decode(t, &got)
		if *got.Notes != "secret-of-a" {
			t.Errorf("user B's PATCH changed A's evidence: %+v", got)
		}
	})
}

// TestList: filters, sorts and pages run in the database; total counts
// every match.
func TestList(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		a1 := f.create(userA, tenantA, "SEC-01", func(b map[string]any) { b["due_date"] = "2026-12-20" })
		a2 := f.create(userA, tenantA, "SEC-02", func(b map[string]any) { b["status"] = "in_progress"; b["due_date"] = "2026-12-01" })
		a3 := f.create(userA, tenantA, "OPS-01", func(b map[string]any) { b["status"] = "in_progress" })
		b1 := f.create(userB, tenantB, "SEC-01")
		list := func(p sdk.Principal, query string) (ids []string, total int) {
			t.Helper()
			var l evidence.List
			f.do(p, http.MethodGet, evidenceAt+query, nil).want(t, "list "+query, http.StatusOK).decode(t, &l)
			for _, it := range l.Items {
				ids = append(ids, it.ID)
			}
			return ids, l.Total
		}
		for _, c := range []struct {
			who   sdk.Principal
			query string
			want  []string
			total int
		}{
			{userA, "", []string{a3.ID, a2.ID, a1.ID}, 3},
			{admin, "", []string{b1.ID, a3.ID, a2.ID, a1.ID}, 4},
			{admin, "?tenant_ids=" + tenantB, []string{b1.ID}, 1},
			{admin, "?requirement_id=SEC-01", []string{b1.ID, a1.ID}, 2},
			{userA, "?status=in_progress", []string{a3.ID, a2.ID}, 2},
			{userA, "?status=in_progress,not_started&sort_by=created_at&sort_order=asc", []string{a1.ID, a2.ID, a3.ID}, 3},
			{userA, "?sort_by=due_date&sort_order=asc", []string{a2.ID, a1.ID, a3.ID}, 3},
			{userA, "?sort_by=due_date", []string{a1.ID, a2.ID, a3.ID}, 3},
			{userA, "?sort_by=requirement_id&sort_order=asc", []string{a3.ID, a1.ID, a2.ID}, 3},
			{userA, "?sort_by=created_at&sort_order=asc&limit=2&offset=1", []string{a2.ID, a3.ID}, 3},
			{userA, "?status=accepted", nil, 0},
		} {
			ids, total := list(c.who, c.query)
			if !slices.Equal(ids, c.want) || total != c.total {
				t.Errorf("%s %s: %v of %d, want %v of %d", c.who.ID, c.query, ids, total, c.want, c.total)
			}
		}
		for _, c := range []struct{ query, loc string }{
			{"?limit=0", "query.limit"}, {"?limit=501", "query.limit"}, {"?offset=-1", "query.offset"}, {"?offset=1000001", "query.offset"},
			{"?sort_by=owner", "query.sort_by"}, {"?sort_order=up", "query.sort_order"}, {"?status=done", "query.status[0]"},
			{"?status=" + strings.Repeat("accepted,", 7), "query.status"},
			{"?requirement_id=" + strings.Repeat("R", 101), "query.requirement_id[0]"},
		} {
			f.do(userA, http.MethodGet, evidenceAt+c.query, nil).wantInvalid(t, c.query, c.loc)
		}
		var l evidence.List
		f.do(userA, http.MethodGet, evidenceAt+"?limit=1", nil).want(t, "limit 1", http.StatusOK).decode(t, &l)
		if l.Limit != 1 || l.Offset != 0 || l.Total != 3 || len(l.Items) != 1 {
			t.Errorf("page: %+v", l)
		}
	})
}

// TestNotFound: an id no evidence has is a 404, one that is not an id a
// 422 naming it.
func TestNotFound(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.do(admin, http.MethodGet, evidenceAt+"/0b5c4f1e-7a59-4a8e-9a35-6a2b1d7c9e01", nil).want(t, "unknown id", http.StatusNotFound)
		f.do(admin, http.MethodGet, evidenceAt+"/42", nil).wantInvalid(t, "not a uuid", "path.id")
	})
}

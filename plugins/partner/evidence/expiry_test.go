package evidence_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/partner/evidence"
)

// accepted is evidence of tenant A for a requirement, accepted for days.
func (f *fixture) accepted(requirement string, days int) evidence.View {
	f.t.Helper()
	v := f.submitted(requirement)
	var out evidence.View
	f.do(admin, http.MethodPost, evidenceAt+"/"+v.ID+"/review", map[string]any{"decision": "accepted", "reason": "ok", "validity_days": days}).
		want(f.t, "accept "+requirement, http.StatusOK).decode(f.t, &out)
	return out
}

func (f *fixture) status(id string) string {
	f.t.Helper()
	var d evidence.Detail
	f.do(admin, http.MethodGet, evidenceAt+"/"+id, nil).want(f.t, "get", http.StatusOK).decode(f.t, &d)
	return d.Status
}

// TestExpiryJob: the daily job marks accepted evidence whose expiry has
// passed as expired, each audited as the job's, and leaves the rest;
// a second run changes nothing. Expired evidence can be renewed.
func TestExpiryJob(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		short := f.accepted("SEC-01", 1)
		long := f.accepted("SEC-02", 30)
		forever := f.submitted("OPS-01")
		f.do(admin, http.MethodPost, evidenceAt+"/"+forever.ID+"/review", map[string]any{"decision": "accepted", "reason": "no expiry"}).
			want(t, "accept without expiry", http.StatusOK)
		// Submitted evidence with a past expires_at is not accepted, so it
		// does not expire.
		pending := f.create(userA, tenantA, "OPS-02", func(b map[string]any) {
			b["status"] = "in_progress"
			b["expires_at"] = f.clock.Now().Add(time.Hour).Format(time.RFC3339)
		})
		f.patch(userA, pending.ID, map[string]any{"status": "submitted"})

		run := func(want int64) {
			t.Helper()
			n, _, err := f.h.RunJob(ctx, evidence.ExpiryJobType)
			if err != nil || n != want {
				t.Fatalf("expiry run: %d, %v; want %d", n, err, want)
			}
		}
		run(0)
		f.clock.Advance(24*time.Hour - 10*time.Minute)
		run(0)
		if s := f.status(short.ID); s != "accepted" {
			t.Errorf("before its expiry: %s", s)
		}
		f.clock.Advance(10 * time.Minute)
		run(1)
		for id, want := range map[string]string{short.ID: "expired", long.ID: "accepted", forever.ID: "accepted", pending.ID: "submitted"} {
			if s := f.status(id); s != want {
				t.Errorf("%s: %s, want %s", id, s, want)
			}
		}
		run(0)
		exp := f.audits("partner_evidence.expire")
		if len(exp) != 1 || exp[0].ResourceID != short.ID || exp[0].TenantID != tenantA || !exp[0].Principal.Anonymous() ||
			exp[0].Details["from_status"] != "accepted" || exp[0].Details["requirement_id"] != "SEC-01" {
			t.Errorf("expiry audit: %+v", exp)
		}
		var d evidence.Detail
		f.do(userA, http.MethodGet, evidenceAt+"/"+short.ID, nil).want(t, "get", http.StatusOK).decode(t, &d)
		if d.UpdatedBy != evidence.ExpiryActor || !d.UpdatedAt.Equal(f.clock.Now()) {
			t.Errorf("expired record: %+v", d)
		}
		statuses, err := f.store.Statuses(ctx, tenantA)
		if err != nil || statuses["SEC-01"] != "expired" || statuses["SEC-02"] != "accepted" || len(statuses) != 4 {
			t.Errorf("statuses: %v, %v", statuses, err)
		}
		// Renewed: back to work, submitted, accepted again.
		f.patch(userA, short.ID, map[string]any{"status": "in_progress", "notes": "renewed"})
		f.patch(userA, short.ID, map[string]any{"status": "submitted"})
		f.do(admin, http.MethodPost, evidenceAt+"/"+short.ID+"/review", map[string]any{"decision": "accepted", "reason": "renewed", "validity_days": 365}).
			want(t, "accept again", http.StatusOK)
		run(0)
		f.clock.Advance(30 * 24 * time.Hour)
		run(1)
		if s := f.status(long.ID); s != "expired" {
			t.Errorf("30 days on: %s", s)
		}
	})
}

// TestExpiryEvents: the daily job raises partner.evidence_expiring for
// accepted evidence that expires within 30 days, a warning, once however
// often it runs, and again, an error, once the evidence has expired;
// evidence further off, without an expiry or not accepted raises nothing.
func TestExpiryEvents(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		soon := f.accepted("SEC-01", 10)
		f.accepted("SEC-02", 90)
		forever := f.submitted("OPS-01")
		f.do(admin, http.MethodPost, evidenceAt+"/"+forever.ID+"/review", map[string]any{"decision": "accepted", "reason": "no expiry"}).
			want(t, "accept without expiry", http.StatusOK)
		f.submitted("OPS-02")
		run := func() {
			t.Helper()
			if _, _, err := f.h.RunJob(ctx, evidence.ExpiryJobType); err != nil {
				t.Fatal(err)
			}
		}
		run()
		run()
		got := f.h.Events()
		if len(got) != 1 {
			t.Fatalf("events %+v, want one for SEC-01", got)
		}
		expires := soon.ExpiresAt.UTC()
		e := got[0]
		if e.Kind != evidence.EventEvidenceExpiring || e.Severity != "warning" || e.TenantID != tenantA || e.Title != "Evidence for SEC-01 expires on "+expires.Format(time.DateOnly) ||
			e.Link != "/partner?tenant_id="+tenantA || e.Details["evidence_id"] != soon.ID || e.Details["stage"] != "expiring" ||
			e.DedupeKey != soon.ID+"/"+expires.Format(time.RFC3339)+"/expiring" {
			t.Errorf("expiring event %+v", e)
		}
		f.clock.Advance(11 * 24 * time.Hour)
		run()
		run()
		got = f.h.Events()
		if len(got) != 2 {
			t.Fatalf("events after the expiry %+v, want the warning and the expiry", got)
		}
		if e := got[1]; e.Severity != "error" || e.Title != "Evidence for SEC-01 expired" || e.Details["stage"] != "expired" ||
			!e.OccurredAt.Equal(expires) || e.DedupeKey != soon.ID+"/"+expires.Format(time.RFC3339)+"/expired" {
			t.Errorf("expired event %+v", e)
		}
		f.clock.Advance(70 * 24 * time.Hour)
		run()
		if got := f.h.Events(); len(got) != 3 || got[2].Details["requirement_id"] != "SEC-02" || got[2].Severity != "warning" {
			t.Errorf("events once SEC-02 nears its expiry: %+v", got)
		}
	})
}

// TestExpiryJobDefinition: the job has its own type and runs daily.
func TestExpiryJobDefinition(t *testing.T) {
	j := (&evidence.Handlers{}).ExpiryJob()
	if j.Name != "partner_evidence_expiry" || j.JobType != "partner_evidence_expiry" || j.Schedule != "@daily" || j.DataDomain != "" {
		t.Errorf("job %+v", j)
	}
}

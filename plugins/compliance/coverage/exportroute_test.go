package coverage_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/sdk"
)

// ocsfEvent is what the export route test reads of an OCSF event.
type ocsfEvent struct {
	ClassUID    int `json:"class_uid"`
	FindingInfo struct {
		UID string `json:"uid"`
	} `json:"finding_info"`
	Compliance struct {
		StatusCode   string   `json:"status_code"`
		Requirements []string `json:"requirements"`
	} `json:"compliance"`
}

// TestFindingsExport: the export of each filter, as CSV and as OCSF,
// holds the findings route's items, in its order, with the attachment header; a user's export is of
// its tenants alone; bad parameters are 422 naming the field, an unknown
// framework or control 404 and another tenant 403, all without the
// attachment header.
func TestFindingsExport(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, set, findingStates())
		today := time.Now().UTC().Format(time.DateOnly)
		for _, c := range []struct {
			query string
			who   sdk.Principal
		}{
			{"sort_by=resource&sort_order=asc", admin},
			{"", admin},
			{"framework=acme&control=AC.1&sort_by=state", admin},
			{"framework=acme&sort_by=evaluated&sort_order=asc", admin},
			{"state=non_compliant", admin},
			{"severity=High", admin},
			{"tenant_ids=" + contoso.ID + "&sort_by=resource", contosoer},
			{"", fabrikamer},
		} {
			var page coverage.Findings
			f.get(t, "/api/v1/compliance/findings?limit=500&"+c.query, c.who, &page)
			var want []string
			for _, it := range page.Items {
				want = append(want, coverage.FindingUID(&it))
			}

			resp, body := f.do(t, "/api/v1/compliance/findings/export?"+c.query, c.who)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
				resp.Header.Get("Content-Disposition") != `attachment; filename="findings-`+today+`.csv"` {
				t.Fatalf("CSV of %q: %d %v %s", c.query, resp.StatusCode, resp.Header, body)
			}
			records, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
			if err != nil || len(records) == 0 || records[0][0] != "tenant_id" || records[0][2] != "resource_id" || records[0][5] != "policy_definition_id" {
				t.Fatalf("CSV of %q: %v %q", c.query, err, body)
			}
			var got []string
			for i, rec := range records[1:] {
				got = append(got, rec[0]+"|"+rec[2]+"|"+rec[5])
				if i < len(page.Items) && (rec[9] != page.Items[i].ComplianceState || rec[11] != page.Items[i].EvaluatedAt.Format(time.RFC3339)) {
					t.Errorf("CSV of %q, row %d: %q, want %+v", c.query, i+1, rec, page.Items[i])
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("CSV of %q: %v, want the findings route's %v", c.query, got, want)
			}

			resp, body = f.do(t, "/api/v1/compliance/findings/export?format=ocsf&"+c.query, c.who)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
				resp.Header.Get("Content-Disposition") != `attachment; filename="findings-`+today+`.json"` {
				t.Fatalf("OCSF of %q: %d %v %s", c.query, resp.StatusCode, resp.Header, body)
			}
			var events []ocsfEvent
			if err := json.Unmarshal(body, &events); err != nil {
				t.Fatalf("OCSF of %q: %v in %s", c.query, err, body)
			}
			got = got[:0]
			for i, e := range events {
				got = append(got, e.FindingInfo.UID)
				if e.ClassUID != 2003 || i < len(page.Items) && e.Compliance.StatusCode != page.Items[i].ComplianceState {
					t.Errorf("OCSF of %q, event %d: %+v", c.query, i, e)
				}
			}
			if !slices.Equal(got, want) || len(events) != page.Total {
				t.Errorf("OCSF of %q: %v, want the findings route's %v (%d)", c.query, got, want, page.Total)
			}
		}

		// A control's export names the control.
		resp, body := f.do(t, "/api/v1/compliance/findings/export?format=ocsf&framework=acme&control=AC.1", admin)
		var events []ocsfEvent
		if err := json.Unmarshal(body, &events); err != nil || resp.StatusCode != http.StatusOK || len(events) != 5 {
			t.Fatalf("AC.1's export: %d %v %s", resp.StatusCode, err, body)
		}
		for _, e := range events {
			if !slices.Equal(e.Compliance.Requirements, []string{"acme:AC.1"}) {
				t.Errorf("AC.1's export: requirements %v", e.Compliance.Requirements)
			}
		}
		// No finding is a header row alone, or an empty array.
		if _, body := f.do(t, "/api/v1/compliance/findings/export?severity=High", admin); strings.Count(string(body), "\n") != 1 {
			t.Errorf("an empty CSV: %q", body)
		}
		if _, body := f.do(t, "/api/v1/compliance/findings/export?format=ocsf&severity=High", admin); string(body) != "[\n]\n" {
			t.Errorf("an empty OCSF export: %q", body)
		}

		for _, bad := range []struct {
			target   string
			who      sdk.Principal
			status   int
			location string
		}{
			{"/api/v1/compliance/findings/export?control=AC.1", admin, http.StatusUnprocessableEntity, "query.control"},
			{"/api/v1/compliance/findings/export?format=xml", admin, http.StatusUnprocessableEntity, "query.format"},
			{"/api/v1/compliance/findings/export?state=broken", admin, http.StatusUnprocessableEntity, "query.state"},
			{"/api/v1/compliance/findings/export?sort_by=name", admin, http.StatusUnprocessableEntity, "query.sort_by"},
			{"/api/v1/compliance/findings/export?framework=nope", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/findings/export?framework=acme&control=ZZ.9&format=ocsf", admin, http.StatusNotFound, ""},
			{"/api/v1/compliance/findings/export?tenant_ids=" + fabrikam.ID, contosoer, http.StatusForbidden, ""},
			{"/api/v1/compliance/findings/export?format=ocsf&tenant_ids=" + contoso.ID + "," + fabrikam.ID, contosoer, http.StatusForbidden, ""},
		} {
			resp, body := f.do(t, bad.target, bad.who)
			var p sdk.Problem
			if resp.StatusCode != bad.status || resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Content-Disposition") != "" ||
				json.Unmarshal(body, &p) != nil {
				t.Errorf("%s: %d %v %s, want a %d problem", bad.target, resp.StatusCode, resp.Header, body, bad.status)
				continue
			}
			if bad.location != "" && (len(p.Errors) != 1 || p.Errors[0].Location != bad.location) {
				t.Errorf("%s: errors %+v, want one at %s", bad.target, p.Errors, bad.location)
			}
			if strings.Contains(string(body), "r6") {
				t.Errorf("%s: the refusal names Fabrikam's resource: %s", bad.target, body)
			}
		}
	})
}

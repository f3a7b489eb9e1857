package anomalies

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var (
	admin = sdk.Principal{ID: "admin", IsAdmin: true, Kind: "user", TenantIDs: []string{"ta", "tb"}}
	userA = sdk.Principal{ID: "user-a", Kind: "user", TenantIDs: []string{"ta"}}
	userB = sdk.Principal{ID: "user-b", Kind: "user", TenantIDs: []string{"tb"}}
)

type routes struct {
	t  *testing.T
	h  *plugintest.Harness
	db *bun.DB
}

func newRoutes(t *testing.T, dialect string) *routes {
	db := open(t, dialect)
	h := &Handlers{DB: db, Now: func() time.Time { return detectedAt }}
	p := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		h.Host = env.Host
		return &sdk.Plugin{Routes: h.Routes()}, nil
	}
	return &routes{t: t, h: plugintest.New(t, sdk.Definition{Name: "cost"}, p, plugintest.Options{}), db: db}
}

func (r *routes) do(method, target, body string, p sdk.Principal) (int, []byte) {
	r.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := r.h.Do(req, p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (r *routes) get(target string, p sdk.Principal, v any) {
	r.t.Helper()
	code, body := r.do(http.MethodGet, target, "", p)
	if code != http.StatusOK {
		r.t.Fatalf("GET %s: %d %s", target, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		r.t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

// invalid asserts a 422 naming location.
func (r *routes) invalid(method, target, body, location string) {
	r.t.Helper()
	code, got := r.do(method, target, body, admin)
	var p sdk.Problem
	_ = json.Unmarshal(got, &p)
	if code != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != location {
		r.t.Errorf("%s %s %s: %d %s, want 422 naming %s", method, target, body, code, got, location)
	}
}

// seed stores anomalies: tenant ta has four in USD over three months and
// one in EUR; tb has two in USD. Detected an hour apart in this order.
func (r *routes) seed() []Anomaly {
	r.t.Helper()
	day := func(s string) ledger.Day {
		d, err := ledger.ParseDay(s)
		if err != nil {
			r.t.Fatal(err)
		}
		return d
	}
	rows := []Anomaly{
		{TenantID: "ta", Service: "VM", Currency: "USD", Day: day("2026-01-10"), Expected: 100_00, Actual: 400_00},
		{TenantID: "ta", Service: "VM", Currency: "USD", Day: day("2026-03-02"), Expected: 200_00, Actual: 900_00},
		{TenantID: "ta", Service: "SQL", Currency: "USD", Day: day("2026-03-05"), Expected: 300_00, Actual: 450_00},
		{TenantID: "ta", Service: "VM", Currency: "EUR", Day: day("2026-03-06"), Expected: 100_00, Actual: 1100_00},
		{TenantID: "ta", Service: "VM", Currency: "USD", Day: day("2025-08-01"), Expected: 100_00, Actual: 300_00},
		{TenantID: "tb", Service: "Storage", Currency: "USD", Day: day("2026-02-11"), Expected: 50_00, Actual: 250_00},
		{TenantID: "tb", Service: "VM", Currency: "USD", Day: day("2026-03-01"), Expected: 1000_00, Actual: 3000_00},
	}
	for i := range rows {
		a := &rows[i]
		a.Month, a.Impact = a.Day.Month(), a.Actual-a.Expected
		a.DeviationPercent = 100 * float64(a.Impact) / float64(a.Expected)
		a.Score = a.DeviationPercent / 10
		a.DetectedAt = detectedAt.Add(time.Duration(i-len(rows)) * time.Hour)
		a.EvaluatedAt = a.DetectedAt
	}
	if _, err := r.db.NewInsert().Model(&rows).ExcludeColumn("id").Exec(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	// The ids, in the order inserted, read back alike on both databases.
	var ids []int64
	if err := r.db.NewSelect().Model((*Anomaly)(nil)).Column("id").Order("detected_at").Scan(context.Background(), &ids); err != nil {
		r.t.Fatal(err)
	}
	for i := range rows {
		rows[i].ID = ids[i]
	}
	return rows
}

func ids(items []Anomaly) []int64 {
	out := make([]int64, len(items))
	for i, a := range items {
		out[i] = a.ID
	}
	return out
}

// TestRoutes runs every anomaly route on both databases: bounds, scope,
// sorting, pagination, grouping in SQL and both acknowledgements.
func TestRoutes(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			r := newRoutes(t, dialect)
			rows := r.seed()
			t.Run("bounds", r.testBounds)
			t.Run("list", func(t *testing.T) { r.t = t; r.testList(rows) })
			t.Run("trends", func(t *testing.T) { r.t = t; r.testTrends() })
			t.Run("by-service and top", func(t *testing.T) { r.t = t; r.testGroups(rows) })
			t.Run("acknowledge", func(t *testing.T) { r.t = t; r.testAcknowledge(rows) })
			t.Run("unacknowledge", func(t *testing.T) { r.t = t; r.testUnacknowledge(rows) })
			t.Run("bulk", func(t *testing.T) { r.t = t; r.testBulk(rows) })
		})
	}
}

func (r *routes) testBounds(t *testing.T) {
	r.t = t
	for _, c := range []struct{ target, location string }{
		{"/api/v1/costs/anomalies?limit=0", "query.limit"},
		{"/api/v1/costs/anomalies?limit=201", "query.limit"},
		{"/api/v1/costs/anomalies?offset=-1", "query.offset"},
		{"/api/v1/costs/anomalies?sort_order=up", "query.sort_order"},
		{"/api/v1/costs/anomalies?sort_by=bogus", "query.sort_by"},
		{"/api/v1/costs/anomalies?acknowledged=maybe", "query.acknowledged"},
		{"/api/v1/costs/anomalies/trends?months=0", "query.months"},
		{"/api/v1/costs/anomalies/trends?months=25", "query.months"},
		{"/api/v1/costs/anomalies/by-service?limit=0", "query.limit"},
		{"/api/v1/costs/anomalies/by-service?limit=51", "query.limit"},
		{"/api/v1/costs/anomalies/top?n=0", "query.n"},
		{"/api/v1/costs/anomalies/top?n=51", "query.n"},
		{"/api/v1/costs/anomalies/top?acknowledged=1x", "query.acknowledged"},
	} {
		r.invalid(http.MethodGet, c.target, "", c.location)
	}
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/abc/acknowledge", "", "path.anomaly_id")
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/1/acknowledge", `{"comment": "seen"}`, "body.comment")
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/1/acknowledge", `{"note": 5}`, "body.note")
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/1/acknowledge", `{"note": "`+strings.Repeat("n", MaxNote+1)+`"}`, "body.note")
	r.invalid(http.MethodDelete, "/api/v1/costs/anomalies/0/acknowledge", "", "path.anomaly_id")
	r.invalid(http.MethodGet, "/api/v1/costs/anomalies?start_date=2026-13-01", "", "query.start_date")
	r.invalid(http.MethodGet, "/api/v1/costs/anomalies?end_date=yesterday", "", "query.end_date")
	r.invalid(http.MethodGet, "/api/v1/costs/anomalies?start_date=2026-03-02&end_date=2026-03-01", "", "query.end_date")
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/1/acknowledge", `{`, "body")
	r.invalid(http.MethodPost, "/api/v1/costs/anomalies/1/acknowledge", `[]`, "body")
	for _, target := range []string{"/api/v1/costs/anomalies", "/api/v1/costs/anomalies/trends", "/api/v1/costs/anomalies/by-service", "/api/v1/costs/anomalies/top"} {
		if code, body := r.do(http.MethodGet, target+"?tenant_ids=tb", "", userA); code != http.StatusForbidden {
			t.Errorf("%s naming another tenant: %d %s", target, code, body)
		}
	}
}

func (r *routes) testList(rows []Anomaly) {
	t := r.t
	var l List
	r.get("/api/v1/costs/anomalies", admin, &l)
	if l.Total != 7 || l.Limit != 50 || l.Offset != 0 || !slices.Equal(ids(l.Items), []int64{rows[6].ID, rows[5].ID, rows[4].ID, rows[3].ID, rows[2].ID, rows[1].ID, rows[0].ID}) {
		t.Errorf("default list: %+v", l)
	}
	got := l.Items[0]
	if got.Impact != 2000_00 || got.Day.String() != "2026-03-01" || got.Acknowledged || got.AcknowledgedBy != nil {
		t.Errorf("first item %+v", got)
	}
	r.get("/api/v1/costs/anomalies?sort_by=impact&limit=2&offset=1", admin, &l)
	if l.Total != 7 || l.Limit != 2 || l.Offset != 1 || !slices.Equal(ids(l.Items), []int64{rows[3].ID, rows[1].ID}) {
		t.Errorf("by impact, second page of two: %+v", ids(l.Items))
	}
	r.get("/api/v1/costs/anomalies?sort_by=date&sort_order=asc", userA, &l)
	if l.Total != 5 || !slices.Equal(ids(l.Items), []int64{rows[4].ID, rows[0].ID, rows[1].ID, rows[2].ID, rows[3].ID}) {
		t.Errorf("tenant A by date: %+v", ids(l.Items))
	}
	r.get("/api/v1/costs/anomalies?tenant_ids=tb&sort_by=deviation", admin, &l)
	if l.Total != 2 || !slices.Equal(ids(l.Items), []int64{rows[5].ID, rows[6].ID}) {
		t.Errorf("tenant B by deviation: %+v", ids(l.Items))
	}
	r.get("/api/v1/costs/anomalies?acknowledged=true", admin, &l)
	if l.Total != 0 || len(l.Items) != 0 {
		t.Errorf("acknowledged before any acknowledgement: %+v", l)
	}
	r.get("/api/v1/costs/anomalies", sdk.Principal{ID: "nobody", Kind: "user"}, &l)
	if l.Total != 0 || len(l.Items) != 0 {
		t.Errorf("a user without tenants: %+v", l)
	}
	// The days of the costs, both ends included.
	r.get("/api/v1/costs/anomalies?start_date=2026-03-01&end_date=2026-03-05&sort_by=date", admin, &l)
	if l.Total != 3 || !slices.Equal(ids(l.Items), []int64{rows[2].ID, rows[1].ID, rows[6].ID}) {
		t.Errorf("March 1 to 5: %+v", ids(l.Items))
	}
	r.get("/api/v1/costs/anomalies?start_date=2026-03-02", userA, &l)
	if l.Total != 3 || !slices.Equal(ids(l.Items), []int64{rows[3].ID, rows[2].ID, rows[1].ID}) {
		t.Errorf("tenant A from March 2: %+v", ids(l.Items))
	}
	r.get("/api/v1/costs/anomalies?end_date=2026-01-10&sort_by=date&sort_order=asc", userA, &l)
	if l.Total != 2 || !slices.Equal(ids(l.Items), []int64{rows[4].ID, rows[0].ID}) {
		t.Errorf("tenant A to January 10: %+v", ids(l.Items))
	}
	// Flagged together, as a first sync flags a year, the newest day
	// comes first.
	ctx := context.Background()
	if _, err := r.db.NewUpdate().Model((*Anomaly)(nil)).Set("detected_at = ?", detectedAt).Where("tenant_id = ?", "ta").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	r.get("/api/v1/costs/anomalies", userA, &l)
	if !slices.Equal(ids(l.Items), []int64{rows[3].ID, rows[2].ID, rows[1].ID, rows[0].ID, rows[4].ID}) {
		t.Errorf("tenant A flagged together: %+v", ids(l.Items))
	}
	for _, a := range rows {
		if _, err := r.db.NewUpdate().Model((*Anomaly)(nil)).Set("detected_at = ?", a.DetectedAt).Where("id = ?", a.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *routes) testTrends() {
	t := r.t
	var tr Trends
	r.get("/api/v1/costs/anomalies/trends?months=3&tenant_ids=tb", admin, &tr)
	// Tenant B: USD only, one anomaly in February and one in March.
	if tr.Months != 3 || tr.Currency != "USD" || !slices.Equal(tr.Currencies, []string{"USD"}) || len(tr.Items) != 3 {
		t.Fatalf("tenant B's trend: %+v", tr)
	}
	for i, want := range []struct {
		month  string
		count  int64
		impact ledger.Amount
	}{{"2026-01", 0, 0}, {"2026-02", 1, 200_00}, {"2026-03", 1, 2000_00}} {
		m := tr.Items[i]
		if m.Month != want.month || m.Count != want.count || m.Impact == nil || *m.Impact != want.impact {
			t.Errorf("tenant B, %s: %+v", want.month, m)
		}
	}
	tr = Trends{}
	r.get("/api/v1/costs/anomalies/trends", userA, &tr)
	// Tenant A: the default six months (October to March) leave out
	// August; March has USD and EUR, so no month sums its impact.
	if tr.Months != 6 || tr.Currency != "" || !slices.Equal(tr.Currencies, []string{"EUR", "USD"}) || tr.Items[0].Month != "2025-10" {
		t.Fatalf("tenant A's trend: %+v", tr)
	}
	march := tr.Items[5]
	if march.Count != 3 || march.Impact != nil || len(march.ByCurrency) != 2 ||
		march.ByCurrency[0] != (CurrencyImpact{"EUR", 1, 1000_00}) || march.ByCurrency[1] != (CurrencyImpact{"USD", 2, 850_00}) {
		t.Errorf("tenant A's March: %+v", march)
	}
	if tr.Items[3].Count != 1 || tr.Items[1].Count != 0 || tr.Items[1].ByCurrency == nil {
		t.Errorf("tenant A's January and November: %+v %+v", tr.Items[3], tr.Items[1])
	}
	r.get("/api/v1/costs/anomalies/trends?months=24", userB, &tr)
	if len(tr.Items) != 24 || tr.Items[0].Month != "2024-04" {
		t.Errorf("24 months: %d from %s", len(tr.Items), tr.Items[0].Month)
	}
}

func (r *routes) testGroups(rows []Anomaly) {
	t := r.t
	var bs ByService
	r.get("/api/v1/costs/anomalies/by-service", admin, &bs)
	want := []ServiceCount{
		{Service: "VM", Currency: "USD", Count: 4, Impact: 300_00 + 700_00 + 200_00 + 2000_00, MaxImpact: 2000_00, LastDay: rows[1].Day},
		{Service: "VM", Currency: "EUR", Count: 1, Impact: 1000_00, MaxImpact: 1000_00, LastDay: rows[3].Day},
		{Service: "Storage", Currency: "USD", Count: 1, Impact: 200_00, MaxImpact: 200_00, LastDay: rows[5].Day},
		{Service: "SQL", Currency: "USD", Count: 1, Impact: 150_00, MaxImpact: 150_00, LastDay: rows[2].Day},
	}
	if !slices.Equal(bs.Items, want) {
		t.Errorf("by service:\n got %+v\nwant %+v", bs.Items, want)
	}
	r.get("/api/v1/costs/anomalies/by-service?limit=1", userA, &bs)
	if len(bs.Items) != 1 || bs.Items[0].Count != 3 || bs.Items[0].Impact != 1200_00 {
		t.Errorf("tenant A's first service: %+v", bs.Items)
	}
	var top Top
	r.get("/api/v1/costs/anomalies/top?n=3", admin, &top)
	if !slices.Equal(ids(top.Items), []int64{rows[6].ID, rows[3].ID, rows[1].ID}) {
		t.Errorf("top 3: %+v", ids(top.Items))
	}
	r.get("/api/v1/costs/anomalies/top?acknowledged=false", userB, &top)
	if !slices.Equal(ids(top.Items), []int64{rows[6].ID, rows[5].ID}) {
		t.Errorf("tenant B's top: %+v", ids(top.Items))
	}
}

func (r *routes) acknowledgedIDs() []int64 {
	r.t.Helper()
	var out []int64
	if err := r.db.NewSelect().Model((*Anomaly)(nil)).Column("id").Where("acknowledged = ?", true).Order("id").Scan(context.Background(), &out); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *routes) testAcknowledge(rows []Anomaly) {
	t := r.t
	target := func(a Anomaly) string { return "/api/v1/costs/anomalies/" + itoa(a.ID) + "/acknowledge" }
	// Another tenant's anomaly and a missing one are both 404, and
	// nothing changes.
	for _, c := range []struct {
		target string
		p      sdk.Principal
	}{{target(rows[6]), userA}, {"/api/v1/costs/anomalies/999999/acknowledge", admin}} {
		if code, body := r.do(http.MethodPost, c.target, "", c.p); code != http.StatusNotFound || strings.Contains(string(body), "tb") {
			t.Errorf("POST %s as %s: %d %s", c.target, c.p.ID, code, body)
		}
	}
	if got := r.acknowledgedIDs(); len(got) != 0 {
		t.Fatalf("refused acknowledgements acknowledged %v", got)
	}
	// The document says what the route takes: a body it may leave out,
	// null or an object without members.
	for _, rt := range r.h.Describe().Routes {
		if rt.Path != "/api/v1/costs/anomalies/{anomaly_id}/acknowledge" || rt.Method != http.MethodPost {
			continue
		}
		var op struct {
			RequestBody struct {
				Required bool `json:"required"`
				Content  map[string]struct {
					Schema struct {
						Type                 []string `json:"type"`
						AdditionalProperties *bool    `json:"additionalProperties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		}
		if err := json.Unmarshal(rt.OpenapiOperation, &op); err != nil {
			t.Fatal(err)
		}
		body := op.RequestBody.Content["application/json"].Schema
		if op.RequestBody.Required || !slices.Equal(body.Type, []string{"object", "null"}) || body.AdditionalProperties == nil || *body.AdditionalProperties {
			t.Errorf("acknowledge's request body: %s", rt.OpenapiOperation)
		}
	}
	var ack Acknowledgement
	// The body is optional: a note, or absent, null or {}.
	for i, p := range []sdk.Principal{userA, admin, admin, admin} {
		code, body := r.do(http.MethodPost, target(rows[0]), []string{`{"note": "  Planned <b>migration</b>  "}`, "", "null", `{"note": "later"}`}[i], p)
		if code != http.StatusOK || json.Unmarshal(body, &ack) != nil {
			t.Fatalf("acknowledge as %s: %d %s", p.ID, code, body)
		}
		// The second is idempotent and keeps the first acknowledgement.
		if ack.AlreadyAcknowledged != (i > 0) || !ack.Anomaly.Acknowledged || ack.Anomaly.ID != rows[0].ID ||
			ack.Anomaly.AcknowledgedBy == nil || *ack.Anomaly.AcknowledgedBy != "user-a" || ack.Anomaly.AcknowledgedAt == nil || !ack.Anomaly.AcknowledgedAt.Equal(detectedAt) ||
			ack.Anomaly.Note == nil || *ack.Anomaly.Note != "Planned <b>migration</b>" {
			t.Errorf("acknowledgement %d: %+v", i, ack)
		}
	}
	if got := r.acknowledgedIDs(); !slices.Equal(got, []int64{rows[0].ID}) {
		t.Errorf("acknowledged in the database: %v", got)
	}
	var audited []plugintest.AuditEntry
	for _, e := range r.h.AuditEntries() {
		if strings.HasPrefix(e.Action, "anomaly.acknowledge.") {
			audited = append(audited, e)
		}
	}
	if len(audited) != 6 || audited[0].Status != "failure" || audited[0].TenantID != "" || audited[2].Action != "anomaly.acknowledge.success" ||
		audited[2].TenantID != "ta" || audited[2].ResourceID != itoa(rows[0].ID) || audited[2].Principal.ID != "user-a" ||
		audited[2].Details["already_acknowledged"] != false || audited[3].Details["already_acknowledged"] != true || audited[2].Details["note"] != "Planned <b>migration</b>" {
		t.Errorf("audit entries %+v", audited)
	}
	var l List
	r.get("/api/v1/costs/anomalies?acknowledged=true", admin, &l)
	if l.Total != 1 || l.Items[0].ID != rows[0].ID || l.Items[0].Note == nil {
		t.Errorf("acknowledged list %+v", l)
	}
}

// testUnacknowledge: another tenant's anomaly and a missing one are 404
// and stay as they were; undoing an acknowledgement removes it and its
// note, once, audited. It leaves rows[0] acknowledged again, without a
// note.
func (r *routes) testUnacknowledge(rows []Anomaly) {
	t := r.t
	target := func(a Anomaly) string { return "/api/v1/costs/anomalies/" + itoa(a.ID) + "/acknowledge" }
	for _, c := range []struct {
		target string
		p      sdk.Principal
	}{{target(rows[0]), userB}, {"/api/v1/costs/anomalies/999999/acknowledge", admin}} {
		if code, body := r.do(http.MethodDelete, c.target, "", c.p); code != http.StatusNotFound || strings.Contains(string(body), "tenant") {
			t.Errorf("DELETE %s as %s: %d %s", c.target, c.p.ID, code, body)
		}
	}
	if got := r.acknowledgedIDs(); !slices.Equal(got, []int64{rows[0].ID}) {
		t.Fatalf("refused undos changed the acknowledged to %v", got)
	}
	var un Unacknowledgement
	for i, want := range []bool{true, false} {
		code, body := r.do(http.MethodDelete, target(rows[0]), "", userA)
		if code != http.StatusOK || json.Unmarshal(body, &un) != nil || un.WasAcknowledged != want || un.Anomaly.ID != rows[0].ID ||
			un.Anomaly.Acknowledged || un.Anomaly.AcknowledgedBy != nil || un.Anomaly.AcknowledgedAt != nil || un.Anomaly.Note != nil {
			t.Errorf("undo %d: %d %s", i, code, body)
		}
	}
	var l List
	r.get("/api/v1/costs/anomalies?acknowledged=false&tenant_ids=ta", userA, &l)
	if l.Total != 5 || !slices.Contains(ids(l.Items), rows[0].ID) {
		t.Errorf("unacknowledged after the undo: %+v", ids(l.Items))
	}
	var audited []plugintest.AuditEntry
	for _, e := range r.h.AuditEntries() {
		if strings.HasPrefix(e.Action, "anomaly.unacknowledge.") {
			audited = append(audited, e)
		}
	}
	if len(audited) != 4 || audited[0].Status != "failure" || audited[0].TenantID != "" || audited[2].Action != "anomaly.unacknowledge.success" ||
		audited[2].TenantID != "ta" || audited[2].Principal.ID != "user-a" || audited[2].Details["was_acknowledged"] != true || audited[3].Details["was_acknowledged"] != false {
		t.Errorf("undo audit entries %+v", audited)
	}
	var ack Acknowledgement
	if code, body := r.do(http.MethodPost, target(rows[0]), "", userA); code != http.StatusOK || json.Unmarshal(body, &ack) != nil ||
		ack.AlreadyAcknowledged || ack.Anomaly.Note != nil {
		t.Errorf("acknowledged again: %d %s", code, body)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (r *routes) testBulk(rows []Anomaly) {
	t := r.t
	const target = "/api/v1/costs/anomalies/bulk-acknowledge"
	many := make([]string, MaxBulk+1)
	for i := range many {
		many[i] = "1"
	}
	for _, c := range []struct{ body, location string }{
		{`{"anomaly_ids": []}`, "body.anomaly_ids"},
		{`{"anomaly_ids": null}`, "body.anomaly_ids"},
		{`{}`, "body.anomaly_ids"},
		{`{"anomaly_ids": [` + strings.Join(many, ",") + `]}`, "body.anomaly_ids"},
		{`{"anomaly_ids": ["1"]}`, "body.anomaly_ids[0]"},
		{`{"anomaly_ids": [1.5]}`, "body.anomaly_ids[0]"},
		{`{"anomaly_ids": [2, 0]}`, "body.anomaly_ids[1]"},
		{`{"anomaly_ids": [1e30]}`, "body.anomaly_ids[0]"},
		{`{"anomaly_ids": 1}`, "body.anomaly_ids"},
		{`[1, 2]`, "body"},
		{`{"anomaly_ids": [1], "note": "x"}`, "body.note"},
		{``, "body"},
	} {
		r.invalid(http.MethodPost, target, c.body, c.location)
	}
	before := r.acknowledgedIDs()
	// User A names two of its anomalies, one of tenant B's and a missing
	// one: nothing is acknowledged, and the refused ids are named.
	body := `{"anomaly_ids": [` + itoa(rows[1].ID) + `, ` + itoa(rows[6].ID) + `, 999999, ` + itoa(rows[2].ID) + `]}`
	code, got := r.do(http.MethodPost, target, body, userA)
	var p sdk.Problem
	if code != http.StatusNotFound || json.Unmarshal(got, &p) != nil || len(p.Errors) != 2 ||
		p.Errors[0].Value != float64(rows[6].ID) || p.Errors[1].Value != float64(999999) || p.Errors[0].Location != "body.anomaly_ids" ||
		!strings.Contains(p.Detail, itoa(rows[6].ID)) || !strings.Contains(p.Detail, "999999") {
		t.Fatalf("bulk naming another tenant's anomaly: %d %s", code, got)
	}
	if after := r.acknowledgedIDs(); !slices.Equal(after, before) {
		t.Fatalf("a refused bulk request acknowledged %v (before %v)", after, before)
	}
	// The admin acknowledges across tenants, one already acknowledged and
	// one named twice.
	body = `{"anomaly_ids": [` + itoa(rows[0].ID) + `, ` + itoa(rows[1].ID) + `, ` + itoa(rows[6].ID) + `, ` + itoa(rows[1].ID) + `]}`
	var res BulkResult
	for i, want := range []BulkResult{
		{AnomalyIDs: []int64{rows[0].ID, rows[1].ID, rows[6].ID}, Acknowledged: 2, AlreadyAcknowledged: 1},
		{AnomalyIDs: []int64{rows[0].ID, rows[1].ID, rows[6].ID}, Acknowledged: 0, AlreadyAcknowledged: 3},
	} {
		code, got := r.do(http.MethodPost, target, body, admin)
		if code != http.StatusOK || json.Unmarshal(got, &res) != nil || !slices.Equal(res.AnomalyIDs, want.AnomalyIDs) ||
			res.Acknowledged != want.Acknowledged || res.AlreadyAcknowledged != want.AlreadyAcknowledged {
			t.Errorf("bulk %d: %d %s, want %+v", i, code, got, want)
		}
	}
	if got := r.acknowledgedIDs(); !slices.Equal(got, []int64{rows[0].ID, rows[1].ID, rows[6].ID}) {
		t.Errorf("acknowledged after bulk: %v", got)
	}
	var a Anomaly
	if err := r.db.NewSelect().Model(&a).Where("id = ?", rows[6].ID).Scan(context.Background()); err != nil || *a.AcknowledgedBy != "admin" {
		t.Errorf("tenant B's anomaly acknowledged by %v (%v)", a.AcknowledgedBy, err)
	}
	var audited []plugintest.AuditEntry
	for _, e := range r.h.AuditEntries() {
		if strings.HasPrefix(e.Action, "anomaly.bulk_acknowledge.") {
			audited = append(audited, e)
		}
	}
	// The refusal, then one entry per tenant for each of the two requests.
	if len(audited) != 5 || audited[0].Status != "failure" || audited[0].Principal.ID != "user-a" ||
		audited[1].TenantID != "ta" || audited[2].TenantID != "tb" || audited[1].Details["acknowledged"] != float64(1) || audited[1].Details["already_acknowledged"] != float64(1) ||
		audited[3].Details["acknowledged"] != float64(0) {
		t.Errorf("bulk audit entries %+v", audited)
	}
}

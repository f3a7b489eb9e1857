package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/migrations"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newStore(t *testing.T, dialect string) *audit.Store {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return audit.NewStore(db)
}

func ptr[T any](v T) *T { return &v }

func mustAppend(t *testing.T, s *audit.Store, e audit.Entry) {
	t.Helper()
	if err := s.Append(context.Background(), e); err != nil {
		t.Fatalf("Append(%s): %v", e.Action, err)
	}
}

func mustList(t *testing.T, s *audit.Store, f audit.Filter) ([]audit.Entry, int) {
	t.Helper()
	items, total, err := s.List(context.Background(), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	return items, total
}

func requestIDs(items []audit.Entry) []string {
	ids := make([]string, 0, len(items))
	for _, e := range items {
		ids = append(ids, e.RequestID)
	}
	return ids
}

// seed appends six entries, r1 oldest to r6 newest, a minute apart.
func seed(t *testing.T, s *audit.Store) {
	t.Helper()
	entries := []audit.Entry{
		{ActorID: "alice", ActorEmail: "alice@example.com", Action: "tenant.create.success", Status: audit.StatusSuccess,
			TenantID: ptr("t1"), ResourceType: "tenant", ResourceID: "t1"},
		{ActorID: "bob", ActorEmail: "Bob@Example.com", Action: "tenant.delete.failure", Status: audit.StatusFailure,
			TenantID: ptr("t1"), ResourceType: "tenant", ResourceID: "t1"},
		{ActorID: "alice", ActorEmail: "alice@example.com", Action: "auth.login.success", Status: audit.StatusSuccess},
		{ActorID: "bob", ActorEmail: "bob@example.com", Action: "auth.login.failure", Status: audit.StatusFailure},
		{ActorID: "carol", ActorEmail: "carol@example.com", Action: "tenant_member.add.success", Status: audit.StatusSuccess,
			TenantID: ptr("t2"), ResourceType: "user", ResourceID: "u9"},
		{ActorID: "alice", ActorEmail: "alice@example.com", Action: "policy.evaluate.warning", Status: audit.StatusWarning,
			TenantID: ptr("t2"), ResourceType: "policy", ResourceID: "p1"},
	}
	for i, e := range entries {
		e.Timestamp = t0.Add(time.Duration(i) * time.Minute)
		e.RequestID = fmt.Sprintf("r%d", i+1)
		mustAppend(t, s, e)
	}
}

func TestAppendRoundTrip(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			zone := time.FixedZone("UTC+2", 2*60*60)
			stamped := time.Date(2025, 3, 1, 14, 0, 0, 123456789, zone)
			mustAppend(t, s, audit.Entry{
				Timestamp:    stamped,
				ActorID:      "alice",
				ActorEmail:   "alice@example.com",
				Action:       "tenant.update.success",
				Status:       audit.StatusSuccess,
				TenantID:     ptr("t1"),
				ResourceType: "tenant",
				ResourceID:   "t1",
				ClientAddr:   "192.0.2.10",
				RequestID:    "req-1",
				Details:      map[string]any{"field": "name", "attempt": 2, "tags": []any{"a", "b"}},
			})

			items, total := mustList(t, s, audit.Filter{})
			if total != 1 || len(items) != 1 {
				t.Fatalf("List = %d items, total %d; want 1", len(items), total)
			}
			got := items[0]
			if got.ID <= 0 {
				t.Errorf("ID = %d, want one assigned by the database", got.ID)
			}
			if want := time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC); !got.Timestamp.Equal(want) {
				t.Errorf("Timestamp = %v, want %v (UTC, microseconds)", got.Timestamp, want)
			}
			if got.Category != "tenant" {
				t.Errorf("Category = %q, want tenant", got.Category)
			}
			if got.TenantID == nil || *got.TenantID != "t1" {
				t.Errorf("TenantID = %v, want t1", got.TenantID)
			}
			wantDetails := map[string]any{"field": "name", "attempt": float64(2), "tags": []any{"a", "b"}}
			if gotJSON, wantJSON := mustJSON(t, got.Details), mustJSON(t, wantDetails); gotJSON != wantJSON {
				t.Errorf("Details = %s, want %s", gotJSON, wantJSON)
			}
			if got.ActorID != "alice" || got.ActorEmail != "alice@example.com" || got.ResourceType != "tenant" ||
				got.ResourceID != "t1" || got.ClientAddr != "192.0.2.10" || got.RequestID != "req-1" || got.Status != audit.StatusSuccess {
				t.Errorf("entry read back as %+v", got)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppendFillsDefaults(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			before := time.Now().Add(-time.Second)
			mustAppend(t, s, audit.Entry{
				ID:       999,
				Action:   "auth.logout.success",
				Category: "wrong",
				Status:   audit.StatusSuccess,
				TenantID: ptr(""),
			})
			items, _ := mustList(t, s, audit.Filter{})
			got := items[0]
			if got.ID == 999 {
				t.Error("caller-supplied ID was stored")
			}
			if got.Category != "auth" {
				t.Errorf("Category = %q, want it derived from the action", got.Category)
			}
			if got.Timestamp.Before(before) || got.Timestamp.After(time.Now().Add(time.Second)) {
				t.Errorf("Timestamp = %v, want now", got.Timestamp)
			}
			if got.TenantID != nil {
				t.Errorf("TenantID = %q, want nil for an empty tenant", *got.TenantID)
			}
			if got.Details == nil || len(got.Details) != 0 {
				t.Errorf("Details = %#v, want an empty object", got.Details)
			}

			js := mustJSON(t, got)
			var decoded map[string]any
			if err := json.Unmarshal([]byte(js), &decoded); err != nil {
				t.Fatal(err)
			}
			if _, ok := decoded["tenant_id"]; ok {
				t.Errorf("JSON %s has tenant_id for a tenant-less entry", js)
			}
			for _, key := range []string{"id", "timestamp", "actor_id", "action", "category", "status", "details"} {
				if _, ok := decoded[key]; !ok {
					t.Errorf("JSON %s lacks %q", js, key)
				}
			}
		})
	}
}

func TestAppendValidates(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			tests := []struct {
				name, action, status, field string
			}{
				{"empty action", "", audit.StatusSuccess, "action"},
				{"two segments", "tenant.create", audit.StatusSuccess, "action"},
				{"four segments", "tenant.create.now.success", audit.StatusSuccess, "action"},
				{"empty segment", "tenant..success", audit.StatusSuccess, "action"},
				{"upper case", "Tenant.create.success", audit.StatusSuccess, "action"},
				{"hyphen", "tenant.bulk-create.success", audit.StatusSuccess, "action"},
				{"trailing dot", "tenant.create.success.", audit.StatusSuccess, "action"},
				{"empty status", "tenant.create.success", "", "status"},
				{"unknown status", "tenant.create.success", "ok", "status"},
				{"status in wrong case", "tenant.create.success", "Success", "status"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					err := s.Append(context.Background(), audit.Entry{Action: tt.action, Status: tt.status})
					var verr *audit.ValidationError
					if !errors.As(err, &verr) {
						t.Fatalf("Append error = %v, want a *ValidationError", err)
					}
					if verr.Field != tt.field {
						t.Errorf("ValidationError.Field = %q, want %q", verr.Field, tt.field)
					}
				})
			}
			if _, total := mustList(t, s, audit.Filter{}); total != 0 {
				t.Errorf("%d invalid entries were stored", total)
			}
		})
	}
}

func TestListFilters(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			seed(t, s)
			at := func(min int) *time.Time { return ptr(t0.Add(time.Duration(min) * time.Minute)) }

			tests := []struct {
				name   string
				filter audit.Filter
				want   []string
			}{
				{"everything newest first", audit.Filter{}, []string{"r6", "r5", "r4", "r3", "r2", "r1"}},
				{"actor id", audit.Filter{ActorID: "alice"}, []string{"r6", "r3", "r1"}},
				{"actor email ignores case", audit.Filter{ActorEmail: "BOB@example.COM"}, []string{"r4", "r2"}},
				{"exact action", audit.Filter{Action: "auth.login.success"}, []string{"r3"}},
				{"exact action is not a prefix", audit.Filter{Action: "auth.login"}, nil},
				{"action prefix", audit.Filter{ActionPrefix: "tenant."}, []string{"r2", "r1"}},
				{"underscore in prefix is literal", audit.Filter{ActionPrefix: "tenant_"}, []string{"r5"}},
				{"prefix without dot", audit.Filter{ActionPrefix: "auth"}, []string{"r4", "r3"}},
				{"tenant", audit.Filter{TenantID: "t2"}, []string{"r6", "r5"}},
				{"resource type", audit.Filter{ResourceType: "tenant"}, []string{"r2", "r1"}},
				{"status", audit.Filter{Status: audit.StatusFailure}, []string{"r4", "r2"}},
				{"since is inclusive", audit.Filter{Since: at(2)}, []string{"r6", "r5", "r4", "r3"}},
				{"until is exclusive", audit.Filter{Until: at(2)}, []string{"r2", "r1"}},
				{"time window", audit.Filter{Since: at(1), Until: at(4)}, []string{"r4", "r3", "r2"}},
				{"since in another zone", audit.Filter{Since: ptr(t0.Add(4 * time.Minute).In(time.FixedZone("x", -5*3600)))}, []string{"r6", "r5"}},
				{"combined", audit.Filter{ActorID: "alice", Status: audit.StatusSuccess}, []string{"r3", "r1"}},
				{"no match", audit.Filter{ActorID: "nobody"}, nil},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					items, total := mustList(t, s, tt.filter)
					if got := requestIDs(items); !slices.Equal(got, tt.want) {
						t.Errorf("List = %v, want %v", got, tt.want)
					}
					if total != len(tt.want) {
						t.Errorf("total = %d, want %d", total, len(tt.want))
					}
				})
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			seed(t, s)

			tests := []struct {
				limit, offset int
				want          []string
			}{
				{3, 0, []string{"r6", "r5", "r4"}},
				{3, 3, []string{"r3", "r2", "r1"}},
				{4, 4, []string{"r2", "r1"}},
				{3, 6, nil},
				{3, 100, nil},
			}
			for _, tt := range tests {
				items, total := mustList(t, s, audit.Filter{Limit: tt.limit, Offset: tt.offset})
				if got := requestIDs(items); !slices.Equal(got, tt.want) {
					t.Errorf("limit %d offset %d: got %v, want %v", tt.limit, tt.offset, got, tt.want)
				}
				if total != 6 {
					t.Errorf("limit %d offset %d: total = %d, want 6 regardless of the page", tt.limit, tt.offset, total)
				}
			}
		})
	}
}

func TestListDefaultLimit(t *testing.T) {
	s := newStore(t, store.DialectSQLite)
	for range audit.DefaultLimit + 1 {
		mustAppend(t, s, audit.Entry{Action: "auth.login.success", Status: audit.StatusSuccess})
	}
	items, total := mustList(t, s, audit.Filter{})
	if len(items) != audit.DefaultLimit || total != audit.DefaultLimit+1 {
		t.Errorf("List without a limit = %d items, total %d; want %d and %d",
			len(items), total, audit.DefaultLimit, audit.DefaultLimit+1)
	}
}

func TestListOrdersTiesByInsertion(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			// Appended out of time order, with a tie at t0+1m.
			for _, e := range []struct {
				id  string
				min int
			}{{"a", 1}, {"b", 0}, {"c", 1}, {"d", 2}} {
				mustAppend(t, s, audit.Entry{
					Action: "auth.login.success", Status: audit.StatusSuccess, RequestID: e.id,
					Timestamp: t0.Add(time.Duration(e.min) * time.Minute),
				})
			}
			items, _ := mustList(t, s, audit.Filter{})
			if got, want := requestIDs(items), []string{"d", "c", "a", "b"}; !slices.Equal(got, want) {
				t.Errorf("order = %v, want %v (time descending, later insert first on ties)", got, want)
			}
		})
	}
}

func TestListRejectsBadFilters(t *testing.T) {
	s := newStore(t, store.DialectSQLite)
	tests := []struct {
		name   string
		filter audit.Filter
		field  string
	}{
		{"negative limit", audit.Filter{Limit: -1}, "limit"},
		{"limit above maximum", audit.Filter{Limit: audit.MaxLimit + 1}, "limit"},
		{"negative offset", audit.Filter{Offset: -1}, "offset"},
		{"unknown status", audit.Filter{Status: "done"}, "status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.List(context.Background(), tt.filter)
			var verr *audit.ValidationError
			if !errors.As(err, &verr) || verr.Field != tt.field {
				t.Errorf("List error = %v, want a ValidationError on %s", err, tt.field)
			}
		})
	}
	if _, _, err := s.List(context.Background(), audit.Filter{Limit: audit.MaxLimit}); err != nil {
		t.Errorf("List at the maximum limit: %v", err)
	}
}

func TestSummary(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			seed(t, s)

			tests := []struct {
				name   string
				filter audit.SummaryFilter
				want   map[string]int
			}{
				{"all", audit.SummaryFilter{},
					map[string]int{"tenant": 2, "auth": 2, "tenant_member": 1, "policy": 1}},
				{"one tenant", audit.SummaryFilter{TenantIDs: []string{"t1"}},
					map[string]int{"tenant": 2}},
				{"several tenants", audit.SummaryFilter{TenantIDs: []string{"t1", "t2"}},
					map[string]int{"tenant": 2, "tenant_member": 1, "policy": 1}},
				{"no tenants", audit.SummaryFilter{TenantIDs: []string{}}, map[string]int{}},
				{"unknown tenant", audit.SummaryFilter{TenantIDs: []string{"nope"}}, map[string]int{}},
				{"actor", audit.SummaryFilter{ActorID: "alice"},
					map[string]int{"tenant": 1, "auth": 1, "policy": 1}},
				{"since", audit.SummaryFilter{Since: ptr(t0.Add(3 * time.Minute))},
					map[string]int{"auth": 1, "tenant_member": 1, "policy": 1}},
				{"tenant and actor", audit.SummaryFilter{TenantIDs: []string{"t2"}, ActorID: "alice"},
					map[string]int{"policy": 1}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got, err := s.Summary(context.Background(), tt.filter)
					if err != nil {
						t.Fatalf("Summary: %v", err)
					}
					if !maps.Equal(got, tt.want) {
						t.Errorf("Summary = %v, want %v", got, tt.want)
					}
				})
			}
		})
	}
}

func TestPrune(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			seed(t, s)
			ctx := context.Background()

			n, err := s.Prune(ctx, t0.Add(2*time.Minute))
			if err != nil || n != 2 {
				t.Fatalf("Prune = %d, %v; want 2 removed", n, err)
			}
			items, total := mustList(t, s, audit.Filter{})
			if got, want := requestIDs(items), []string{"r6", "r5", "r4", "r3"}; !slices.Equal(got, want) || total != 4 {
				t.Errorf("after Prune: %v (total %d), want %v", got, total, want)
			}
			if n, err := s.Prune(ctx, t0.Add(2*time.Minute)); err != nil || n != 0 {
				t.Errorf("second Prune = %d, %v; want 0", n, err)
			}
		})
	}
}

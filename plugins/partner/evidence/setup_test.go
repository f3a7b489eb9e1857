package evidence_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	tenantA    = "aaaaaaaa-0000-4000-8000-00000000000a"
	tenantB    = "bbbbbbbb-0000-4000-8000-00000000000b"
	evidenceAt = "/api/v1/partner/evidence"
)

var (
	admin = sdk.Principal{ID: "admin-1", Email: "admin@example.com", IsAdmin: true, Kind: "user", TenantIDs: []string{tenantA, tenantB}}
	userA = sdk.Principal{ID: "user-a", Email: "a@brand-a.example", Kind: "user", TenantIDs: []string{tenantA}}
	userB = sdk.Principal{ID: "user-b", Email: "b@brand-b.example", Kind: "user", TenantIDs: []string{tenantB}}
	// catalogue is the requirements the tests' partner asks for.
	catalogue = []string{"SEC-01", "SEC-02", "OPS-01", "OPS-02"}
)

// clock is a settable time the handlers and the expiry read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is the evidence routes and the expiry job served through the
// plugin protocol, on a real database of one dialect and blobs in a
// directory of the test's own.
type fixture struct {
	t       *testing.T
	h       *plugintest.Harness
	db      *bun.DB
	store   *evidence.Store
	blobDir string
	clock   *clock
}

func newFixture(t *testing.T, dialect string, maxFileBytes int64) *fixture {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, evidence.Migrations(), "plugin_partner_migrations"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, store: &evidence.Store{DB: db}, blobDir: filepath.Join(t.TempDir(), "blobs"),
		clock: &clock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}}
	blobs, err := evidence.NewDir(f.blobDir)
	if err != nil {
		t.Fatal(err)
	}
	handlers := &evidence.Handlers{}
	plugin := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		*handlers = evidence.Handlers{Store: f.store, Blobs: blobs, Host: env.Host, Logger: env.Logger, Now: f.clock.Now,
			MaxFileBytes: maxFileBytes, Requirement: func(id string) bool { return slices.Contains(catalogue, id) }}
		return &sdk.Plugin{Routes: handlers.Routes(), Jobs: []sdk.Job{handlers.ExpiryJob()}, Events: []sdk.EventType{evidence.EventType}}, nil
	}
	f.h = plugintest.New(t, sdk.Definition{Name: "partner"}, plugin, plugintest.Options{Tenants: []sdk.Tenant{
		{ID: tenantA, Name: "Brand A", IsActive: true},
		{ID: tenantB, Name: "Brand B", IsActive: true},
	}})
	return f
}

func eachDialect(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, newFixture(t, dialect, 0)) })
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %d %s: %v", r.status, r.body, err)
	}
}

// want fails the test unless the response has the status.
func (r response) want(t *testing.T, what string, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	return r
}

// wantProblem fails the test unless the response has the status and its
// problem names loc with a message holding each of words.
func (r response) wantProblem(t *testing.T, what string, status int, loc string, words ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: %d %.300s, want %d naming %s", what, r.status, r.body, status, loc)
		return
	}
	var p sdk.Problem
	r.decode(t, &p)
	for _, e := range p.Errors {
		if e.Location != loc {
			continue
		}
		for _, w := range words {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: the error at %s says %q, not %q", what, loc, e.Message, w)
			}
		}
		return
	}
	t.Errorf("%s: the problem does not name %s: %.500s", what, loc, r.body)
}

func (r response) wantInvalid(t *testing.T, what, loc string, words ...string) {
	t.Helper()
	r.wantProblem(t, what, http.StatusUnprocessableEntity, loc, words...)
}

func (f *fixture) send(p sdk.Principal, req *http.Request) response {
	f.t.Helper()
	resp := f.h.Do(req, p)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func (f *fixture) do(p sdk.Principal, method, path string, body any) response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return f.send(p, req)
}

// create starts evidence for a requirement as p, the body changed by
// change, and fails the test unless it is created.
func (f *fixture) create(p sdk.Principal, tenant, requirement string, change ...func(map[string]any)) evidence.View {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	body := map[string]any{"tenant_id": tenant, "requirement_id": requirement}
	for _, c := range change {
		c(body)
	}
	var v evidence.View
	f.do(p, http.MethodPost, evidenceAt, body).want(f.t, "create "+requirement, http.StatusCreated).decode(f.t, &v)
	return v
}

// patch changes evidence as p and fails the test unless it is changed.
func (f *fixture) patch(p sdk.Principal, id string, body map[string]any) evidence.View {
	f.t.Helper()
	f.clock.Advance(time.Minute)
	var v evidence.View
	f.do(p, http.MethodPatch, evidenceAt+"/"+id, body).want(f.t, "patch", http.StatusOK).decode(f.t, &v)
	return v
}

// submitted is evidence of tenant A for a requirement moved to submitted.
func (f *fixture) submitted(requirement string) evidence.View {
	f.t.Helper()
	v := f.create(userA, tenantA, requirement, func(b map[string]any) { b["status"] = "in_progress" })
	return f.patch(userA, v.ID, map[string]any{"status": "submitted"})
}

// part is one part of a multipart body.
type part struct {
	field, fileName, contentType string
	content                      []byte
}

// multipartBody builds a multipart/form-data body of the parts.
func multipartBody(t *testing.T, parts ...part) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		hdr := textproto.MIMEHeader{}
		disp := `form-data; name="` + p.field + `"`
		if p.fileName != "" {
			disp += `; filename="` + strings.ReplaceAll(strings.ReplaceAll(p.fileName, `\`, `\\`), `"`, `\"`) + `"`
		}
		hdr.Set("Content-Disposition", disp)
		if p.contentType != "" {
			hdr.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(hdr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

// upload posts the parts to the evidence's files as p.
func (f *fixture) upload(p sdk.Principal, id string, parts ...part) response {
	f.t.Helper()
	f.clock.Advance(time.Second)
	ct, body := multipartBody(f.t, parts...)
	req := httptest.NewRequest(http.MethodPost, evidenceAt+"/"+id+"/files", body)
	req.Header.Set("Content-Type", ct)
	return f.send(p, req)
}

// audits returns the actions audited so far that start with prefix.
func (f *fixture) audits(prefix string) []plugintest.AuditEntry {
	var out []plugintest.AuditEntry
	for _, e := range f.h.AuditEntries() {
		if strings.HasPrefix(e.Action, prefix) {
			out = append(out, e)
		}
	}
	return out
}

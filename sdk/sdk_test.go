package sdk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

func requestAs(p sdk.Principal, target string) *http.Request {
	r := httptest.NewRequest("GET", target, nil)
	return r.WithContext(sdk.WithRequestInfo(r.Context(), sdk.RequestInfo{Principal: p}))
}

func TestTenantScope(t *testing.T) {
	p := sdk.Principal{ID: "u1", TenantIDs: []string{"t1", "t2", "t3"}}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"t1", "t2", "t3"}},
		{"?tenant_ids=", []string{"t1", "t2", "t3"}},
		{"?tenant_ids=t2", []string{"t2"}},
		{"?tenant_ids=t3,t1", []string{"t3", "t1"}},
		{"?tenant_ids=t3&tenant_ids=t1", []string{"t3", "t1"}},
		{"?tenant_ids=t1,%20t2,,&tenant_ids=t3", []string{"t1", "t2", "t3"}},
		{"?other=t9", []string{"t1", "t2", "t3"}},
	} {
		got, err := sdk.TenantScope(requestAs(p, "/x"+tc.query), "tenant_ids")
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.query, got, err, tc.want)
		}
	}
	for _, query := range []string{"?tenant_ids=t9", "?tenant_ids=t1,t9", "?tenant_ids=t1&tenant_ids=t9"} {
		_, err := sdk.TenantScope(requestAs(p, "/x"+query), "tenant_ids")
		var prob *sdk.Problem
		if !errors.As(err, &prob) || prob.Status != http.StatusForbidden || strings.Contains(prob.Detail, "t9") {
			t.Errorf("%q: %v, want a 403 problem that does not repeat t9", query, err)
		}
	}
	got, err := sdk.TenantScope(requestAs(sdk.Principal{ID: "u2"}, "/x"), "tenant_ids")
	if err != nil || len(got) != 0 {
		t.Errorf("principal without tenants: %v, %v; want none", got, err)
	}
	if _, err := sdk.TenantScope(requestAs(sdk.Principal{}, "/x?tenant_ids=t1"), "tenant_ids"); err == nil {
		t.Error("an anonymous caller got a tenant")
	}
}

func TestWriteError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		detail string
	}{
		{sdk.NotFound("no such evidence"), http.StatusNotFound, "no such evidence"},
		{fmt.Errorf("loading: %w", sdk.Conflict("already filed")), http.StatusConflict, "already filed"},
		{sdk.Invalid("query.limit", "must be at most %d", 500), http.StatusUnprocessableEntity, "validation failed: query.limit: must be at most 500"},
		{errors.New("pq: password authentication failed for user steward"), http.StatusInternalServerError, "internal error"},
	} {
		w := httptest.NewRecorder()
		sdk.WriteError(w, tc.err)
		if w.Code != tc.status || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%v: %d %s", tc.err, w.Code, w.Header().Get("Content-Type"))
		}
		if strings.Contains(w.Body.String(), "password") {
			t.Errorf("%v: the error text leaked: %s", tc.err, w.Body)
		}
		var p sdk.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != tc.status || p.Title != http.StatusText(tc.status) || p.Detail != tc.detail {
			t.Errorf("%v: problem %+v (%v)", tc.err, p, err)
		}
	}
	w := httptest.NewRecorder()
	sdk.WriteError(w, sdk.Invalid("query.limit", "too big"))
	var p sdk.Problem
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	if len(p.Errors) != 1 || p.Errors[0].Location != "query.limit" || p.Errors[0].Message != "too big" {
		t.Errorf("Invalid errors = %+v", p.Errors)
	}
}

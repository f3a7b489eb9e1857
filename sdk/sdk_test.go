package sdk_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

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

package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/stewardhq/steward/sdk"
)

type widgetIn struct {
	Body struct {
		Name  string `json:"name" minLength:"1" maxLength:"20"`
		Count int    `json:"count" minimum:"1"`
	}
}

type widget struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// echoed is what the echo route saw of its request.
type echoed struct {
	ContentType string   `json:"content_type"`
	Body        string   `json:"body"`
	Principal   string   `json:"principal"`
	RequestID   string   `json:"request_id"`
	TenantIDs   []string `json:"tenant_ids"`
}

// widgetAPI is an API of a typed route that creates a widget, one that
// echoes its request and one that fails without problem+json, counting
// the calls of its Routes and of the echo route.
func widgetAPI(n *counts) *sdk.LocalAPI {
	return &sdk.LocalAPI{Routes: func() []sdk.Route {
		n.routes++
		return []sdk.Route{
			sdk.Post("/api/widgets", sdk.Op{ID: "widgets-create", Status: http.StatusCreated},
				func(_ context.Context, in *widgetIn) (*widget, error) {
					return &widget{in.Body.Name, in.Body.Count}, nil
				}),
			{Method: http.MethodPost, Path: "/api/echo", Handler: func(w http.ResponseWriter, r *http.Request) {
				n.echoes++
				body, _ := io.ReadAll(r.Body)
				info := sdk.Info(r.Context())
				sdk.WriteJSON(w, http.StatusOK, echoed{r.Header.Get("Content-Type"), string(body), info.Principal.ID,
					info.RequestID, info.Principal.TenantIDs})
			}},
			{Method: http.MethodGet, Path: "/api/broken", Handler: func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "upstream gone", http.StatusBadGateway)
			}},
		}
	}}
}

type counts struct{ routes, echoes int }

// asCaller is a context of a request of a user who may see t1 and t2.
func asCaller() context.Context {
	return sdk.WithRequestInfo(context.Background(), sdk.RequestInfo{RequestID: "req-1",
		Principal: sdk.Principal{ID: "u1", Kind: "user", TenantIDs: []string{"t1", "t2"}}})
}

func TestLocalAPICallAnswers(t *testing.T) {
	var n counts
	api := widgetAPI(&n)
	a, err := api.Call(asCaller(), "t1", http.MethodPost, "/api/widgets", widget{"gear", 3})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusCreated || a.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("answer = %d %s %s, want 201 application/json", a.Status, a.Header.Get("Content-Type"), a.Body)
	}
	var got widget
	if err := a.Decode(&got); err != nil || got != (widget{"gear", 3}) {
		t.Errorf("decoded %+v (%v), want the widget sent", got, err)
	}

	a, err = api.Call(asCaller(), "t1", http.MethodPost, "/api/widgets", map[string]any{"name": "", "count": 0})
	if err != nil {
		t.Fatal(err)
	}
	p := a.Problem()
	if a.Status != http.StatusUnprocessableEntity || p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("answer = %d %s, want 422", a.Status, a.Body)
	}
	var fields []string
	for _, e := range p.Errors {
		fields = append(fields, e.Location)
	}
	slices.Sort(fields)
	if !slices.Equal(fields, []string{"body.count", "body.name"}) {
		t.Errorf("problem's errors name %v, want body.count and body.name", fields)
	}

	a, err = api.Call(asCaller(), "", http.MethodGet, "/api/broken", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := a.Problem(); a.Status != http.StatusBadGateway || p.Status != http.StatusBadGateway || p.Title != "Bad Gateway" || p.Detail != "" || p.Errors != nil {
		t.Errorf("answer %d, problem %+v, want 502 with a problem of its status alone", a.Status, p)
	}

	if a, err = api.Call(asCaller(), "", http.MethodGet, "/api/none", nil); err != nil || a.Status != http.StatusNotFound {
		t.Errorf("unknown route answered %v (%v), want 404", a, err)
	}
	if n.routes != 1 {
		t.Errorf("Routes called %d times over four calls, want once", n.routes)
	}
}

func TestLocalAPICallNarrowsTheCallerToTheTenant(t *testing.T) {
	var n counts
	api := widgetAPI(&n)
	for _, tc := range []struct {
		tenant string
		want   []string
	}{
		{"t2", []string{"t2"}},
		{"", []string{"t1", "t2"}},
	} {
		a, err := api.Call(asCaller(), tc.tenant, http.MethodPost, "/api/echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got echoed
		if err := a.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.TenantIDs, tc.want) || got.Principal != "u1" || got.RequestID != "req-1" {
			t.Errorf("tenant %q: handler saw %+v, want u1 of req-1 with tenants %v", tc.tenant, got, tc.want)
		}
	}

	_, err := api.Call(asCaller(), "t3", http.MethodPost, "/api/echo", nil)
	var p *sdk.Problem
	if !errors.As(err, &p) || p.Status != http.StatusForbidden {
		t.Errorf("a tenant the caller may not see: error %v, want a 403 problem", err)
	}
	if n.echoes != 2 {
		t.Errorf("the route served %d calls, want 2: the refused one reached it", n.echoes)
	}
}

func TestLocalAPICallSendsTheBody(t *testing.T) {
	var n counts
	api := widgetAPI(&n)
	call := func(do func() (*sdk.Answer, error)) echoed {
		t.Helper()
		a, err := do()
		if err != nil {
			t.Fatal(err)
		}
		var got echoed
		if err := a.Decode(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	got := call(func() (*sdk.Answer, error) {
		return api.Call(asCaller(), "t1", http.MethodPost, "/api/echo", map[string]any{"name": "gear", "tags": []string{"a"}})
	})
	if got.ContentType != "application/json" || got.Body != `{"name":"gear","tags":["a"]}` {
		t.Errorf("a body: route saw %q %q, want it as JSON", got.ContentType, got.Body)
	}
	if got = call(func() (*sdk.Answer, error) { return api.Call(asCaller(), "t1", http.MethodPost, "/api/echo", nil) }); got.ContentType != "" || got.Body != "" {
		t.Errorf("no body: route saw %q %q, want neither a content type nor a body", got.ContentType, got.Body)
	}
	form := "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n"
	got = call(func() (*sdk.Answer, error) {
		return api.CallRaw(asCaller(), "t1", http.MethodPost, "/api/echo", "multipart/form-data; boundary=b", []byte(form))
	})
	if got.ContentType != "multipart/form-data; boundary=b" || got.Body != form {
		t.Errorf("a raw body: route saw %q %q, want it as sent", got.ContentType, got.Body)
	}

	if _, err := api.Call(asCaller(), "t1", http.MethodPost, "/api/echo", func() {}); err == nil {
		t.Error("a body JSON cannot encode was sent")
	}
}

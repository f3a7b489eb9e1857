package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/humatest"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// testAPI serves operations to the principal the X-Caller header names.
func testAPI(t *testing.T, callers map[string]*Principal) humatest.TestAPI {
	_, a := humatest.New(t)
	a.UseMiddleware(func(ctx huma.Context, next func(huma.Context)) {
		next(WithRequest(ctx, callers[ctx.Header("X-Caller")], Meta{}))
	})
	return a
}

type echoed struct {
	Tenants []string `json:"tenants"`
}

func TestHandleTenantInput(t *testing.T) {
	callers := map[string]*Principal{
		"user":  {ID: "u", Kind: KindUser, TenantIDs: []string{"t1", "t2"}},
		"admin": {ID: "a", Kind: KindUser, IsAdmin: true, TenantIDs: []string{"t1", "t2", "t3"}},
	}
	a := testAPI(t, callers)
	var calls int
	echo := func(ids ...string) (*echoed, error) {
		calls++
		return &echoed{Tenants: ids}, nil
	}
	Get(a, "/one/{tenant_id}", sdk.Op{ID: "one"}, func(_ context.Context, in *struct {
		TenantID sdk.TenantID `path:"tenant_id"`
	}) (*echoed, error) {
		return echo(string(in.TenantID))
	})
	Get(a, "/many", sdk.Op{ID: "many"}, func(_ context.Context, in *struct {
		TenantIDs sdk.TenantIDs `query:"tenant_ids"`
	}) (*echoed, error) {
		return echo(in.TenantIDs...)
	})
	Post(a, "/body", sdk.Op{ID: "body"}, func(_ context.Context, in *struct {
		Body struct {
			TenantID sdk.TenantID `json:"tenant_id"`
		}
	}) (*echoed, error) {
		return echo(string(in.Body.TenantID))
	})
	Get(a, "/anonymous", sdk.Op{ID: "anonymous", Auth: sdk.AuthNone}, func(_ context.Context, in *struct {
		TenantID sdk.TenantID `query:"tenant_id"`
	}) (*echoed, error) {
		return echo(string(in.TenantID))
	})

	for _, tt := range []struct {
		name, caller, method, url, body string
		status                          int
		tenants                         []string
	}{
		{"own tenant in the path", "user", http.MethodGet, "/one/t1", "", http.StatusOK, []string{"t1"}},
		{"another tenant in the path", "user", http.MethodGet, "/one/t3", "", http.StatusForbidden, nil},
		{"an admin, any tenant", "admin", http.MethodGet, "/one/unknown", "", http.StatusOK, []string{"unknown"}},
		{"own tenants in the query", "user", http.MethodGet, "/many?tenant_ids=t2", "", http.StatusOK, []string{"t2"}},
		{"one foreign tenant among own", "user", http.MethodGet, "/many?tenant_ids=t1,t3", "", http.StatusForbidden, nil},
		{"no tenant: the caller's", "user", http.MethodGet, "/many", "", http.StatusOK, []string{"t1", "t2"}},
		{"no tenant: an admin's", "admin", http.MethodGet, "/many", "", http.StatusOK, []string{"t1", "t2", "t3"}},
		{"own tenant in the body", "user", http.MethodPost, "/body", `{"tenant_id":"t2"}`, http.StatusOK, []string{"t2"}},
		{"another tenant in the body", "user", http.MethodPost, "/body", `{"tenant_id":"t9"}`, http.StatusForbidden, nil},
		{"anonymous, naming a tenant", "", http.MethodGet, "/anonymous?tenant_id=t1", "", http.StatusForbidden, nil},
		{"anonymous, naming none", "", http.MethodGet, "/anonymous", "", http.StatusOK, []string{""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			args := []any{"X-Caller: " + tt.caller}
			if tt.body != "" {
				args = append(args, strings.NewReader(tt.body))
			}
			resp := a.Do(tt.method, tt.url, args...)
			if resp.Code != tt.status {
				t.Fatalf("%d, want %d: %s", resp.Code, tt.status, resp.Body)
			}
			if tt.status == http.StatusForbidden {
				var p huma.ErrorModel
				if err := json.Unmarshal(resp.Body.Bytes(), &p); err != nil || p.Detail != protocol.MsgNoTenantAccess {
					t.Errorf("refusal %s (%v)", resp.Body, err)
				}
				if calls != 0 {
					t.Error("the handler ran for a refused request")
				}
				return
			}
			var got echoed
			if err := json.Unmarshal(resp.Body.Bytes(), &got); err != nil || !slices.Equal(got.Tenants, tt.tenants) {
				t.Errorf("the handler got %v, want %v (%v)", got.Tenants, tt.tenants, err)
			}
		})
	}

	doc := a.OpenAPI()
	for path, want := range map[string]map[string]string{
		"/one/{tenant_id}": {"path": "tenant_id"}, "/many": {"query": "tenant_ids"}, "/body": {"body": "tenant_id"}, "/anonymous": {"query": "tenant_id"},
	} {
		item := doc.Paths[path]
		op := item.Get
		if op == nil {
			op = item.Post
		}
		if got := op.Extensions[ExtTenantScoped]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s is %v, want %v", path, ExtTenantScoped, got, want)
		}
	}
}

func TestHandleAuth(t *testing.T) {
	a := testAPI(t, nil)
	ok := func(context.Context, *sdk.Empty) (*sdk.Empty, error) { return &sdk.Empty{}, nil }
	Get(a, "/user", sdk.Op{ID: "user"}, ok)
	Get(a, "/admin", sdk.Op{ID: "admin", Auth: sdk.AuthAdmin}, ok)
	Get(a, "/none", sdk.Op{ID: "none", Auth: sdk.AuthNone}, ok)
	for path, want := range map[string]struct {
		auth          string
		admin, secure bool
	}{"/user": {AuthUser, false, true}, "/admin": {AuthAdmin, true, true}, "/none": {AuthNone, false, false}} {
		op := a.OpenAPI().Paths[path].Get
		if op.Metadata[MetaAuth] != want.auth || (op.Extensions[ExtAdmin] == true) != want.admin || (len(op.Security) > 0) != want.secure {
			t.Errorf("%s: metadata %v, extensions %v, security %v", path, op.Metadata, op.Extensions, op.Security)
		}
		if _, scoped := op.Extensions[ExtTenantScoped]; scoped {
			t.Errorf("%s takes no tenant but is marked %s", path, ExtTenantScoped)
		}
		if op.Responses["204"] == nil || (op.Responses["401"] != nil) != want.secure || op.Responses["429"] == nil {
			t.Errorf("%s answers %v", path, slices.Collect(maps.Keys(op.Responses)))
		}
	}
}

// TestHandleRefusesDeclarations checks that a declaration Handle cannot
// honour panics as the operation is added rather than being ignored.
func TestHandleRefusesDeclarations(t *testing.T) {
	type twoTenants struct {
		A sdk.TenantID `query:"a"`
		B sdk.TenantID `query:"b"`
	}
	for name, add := range map[string]func(huma.API){
		"a rate class": func(a huma.API) {
			Post(a, "/x", sdk.Op{ID: "x", RateClass: sdk.RateAuth}, func(context.Context, *sdk.Empty) (*sdk.Empty, error) { return nil, nil })
		},
		"a costly rate class": func(a huma.API) {
			Post(a, "/x", sdk.Op{ID: "x", RateClass: sdk.RateCostly}, func(context.Context, *sdk.Empty) (*sdk.Empty, error) { return nil, nil })
		},
		"two tenant inputs": func(a huma.API) {
			Get(a, "/x", sdk.Op{ID: "x"}, func(context.Context, *twoTenants) (*sdk.Empty, error) { return nil, nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Handle accepted it")
				}
			}()
			add(testAPI(t, nil))
		})
	}
	// The default rate class is accepted.
	Post(testAPI(t, nil), "/x", sdk.Op{ID: "x", RateClass: sdk.RateDefault}, func(context.Context, *sdk.Empty) (*sdk.Empty, error) { return nil, nil })
}

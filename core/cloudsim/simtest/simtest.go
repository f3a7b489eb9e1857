// Package simtest holds what tests of the simulated cloud and of its
// clients share: a simulator started for one test, a settable clock, and
// tokens and JSON calls over the simulator's TLS.
package simtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// The app registration Client registers, which Token authenticates as.
const (
	ClientID     = "app"
	ClientSecret = "secret"
)

// Clock is a simulator's clock, moved by tests.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time; pass it as cloudsim.Options.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Fixed is a time source that always answers t.
func Fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

// Client is the identity provider's options with one confidential client.
func Client(id, secret string) idp.Options {
	return idp.Options{Clients: map[string]idp.Client{id: {Secret: secret}}}
}

// Start serves w on a simulated cloud with the identity provider, and
// stops it when the test ends.
func Start(t testing.TB, w *world.World, opts cloudsim.Options, idpOpts idp.Options) (*cloudsim.Sim, *idp.Provider) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := cloudsim.Start(ctx, w, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	return s, idp.Register(s, idpOpts)
}

// PostToken posts a token request to a tenant's token endpoint and decodes
// the answer.
func PostToken(t testing.TB, s *cloudsim.Sim, tenant string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := s.HTTPClient().PostForm(s.URLs[cloudsim.IdP]+"/"+tenant+"/oauth2/v2.0/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// Token gets an app-only token of a tenant for scope with the client
// credentials of ClientID.
func Token(t testing.TB, s *cloudsim.Sim, tenant, scope string) string {
	t.Helper()
	status, body := PostToken(t, s, tenant, url.Values{
		"grant_type": {"client_credentials"}, "client_id": {ClientID}, "client_secret": {ClientSecret}, "scope": {scope},
	})
	tok, _ := body["access_token"].(string)
	if tok == "" {
		t.Fatalf("token in %s for %s: %d %v", tenant, scope, status, body)
	}
	return tok
}

// Do sends a request to a service, or to path itself when it is a URL,
// with a bearer token unless token is empty, body as JSON unless it is nil
// and header's fields, and decodes the JSON answer. An empty answer
// decodes to nil; any other that is not JSON fails the test.
func Do(t testing.TB, s *cloudsim.Sim, svc cloudsim.Service, token, method, path string, body any, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	if !strings.HasPrefix(path, "https://") {
		path = s.URLs[svc] + path
	}
	req, err := http.NewRequest(method, path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, raw)
		}
	}
	return resp, out
}

package idp_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
)

// kids lists the key ids a tenant's JWKS publishes.
func (e *env) kids(tenant string) []string {
	e.t.Helper()
	resp, err := e.sim.HTTPClient().Get(e.sim.URLs[cloudsim.IdP] + "/" + tenant + "/discovery/v2.0/keys")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kty, Kid, Use, Alg, N, E string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		e.t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		if k.Kty != "RSA" || k.Use != "sig" || k.Alg != "RS256" || k.N == "" || k.E != "AQAB" || k.Kid == "" {
			e.t.Fatalf("key %+v", k)
		}
		kids = append(kids, k.Kid)
	}
	return kids
}

func kidOf(t *testing.T, raw string) string {
	t.Helper()
	kid, _ := segment(t, raw, 0)["kid"].(string)
	return kid
}

func TestKeyRotation(t *testing.T) {
	e := start(t, idp.Options{KeyRotation: 6 * time.Hour})
	cfg := oauthConfig(e.discover(contosoID), "dev-app", "", "http://127.0.0.1:8400/callback", oauth2.AuthStyleInParams, oidc.ScopeOpenID)
	// A verifier that has not cached keys, as a client starting afresh.
	verify := func(raw string) error {
		_, err := e.discover(contosoID).Verifier(&oidc.Config{ClientID: "dev-app", Now: e.clock.Now}).Verify(e.ctx, raw)
		return err
	}

	before, _ := e.signIn(cfg, alice)
	first := e.kids(contosoID)
	if len(first) != 1 || kidOf(t, idToken(t, before)) != first[0] || kidOf(t, before.AccessToken) != first[0] {
		t.Fatalf("keys %v", first)
	}

	e.p.Rotate()
	second := e.kids(contosoID)
	if len(second) != 2 || second[1] != first[0] || second[0] == first[0] {
		t.Fatalf("after a rotation: %v, before %v", second, first)
	}
	if err := verify(idToken(t, before)); err != nil {
		t.Fatalf("a token signed before the rotation: %v", err)
	}
	if status, _, msg := e.probe(cloudsim.Graph, before.AccessToken); status != http.StatusOK {
		t.Fatalf("an access token signed before the rotation: %d %q", status, msg)
	}
	after, _ := e.signIn(cfg, alice)
	if kidOf(t, idToken(t, after)) != second[0] {
		t.Fatalf("a new token is signed with %s, want the new key %s", kidOf(t, idToken(t, after)), second[0])
	}

	e.p.Rotate()
	third := e.kids(contosoID)
	if len(third) != 2 || third[1] != second[0] || slices.Contains(third, first[0]) {
		t.Fatalf("after two rotations: %v", third)
	}
	if err := verify(idToken(t, before)); err == nil {
		t.Fatal("a token signed with a retired key verified")
	}
	if status, _, msg := e.probe(cloudsim.Graph, before.AccessToken); status != http.StatusUnauthorized || !strings.Contains(msg, "not published") {
		t.Fatalf("an access token signed with a retired key: %d %q", status, msg)
	}
	if err := verify(idToken(t, after)); err != nil {
		t.Fatalf("a token signed with the previous key: %v", err)
	}

	// Keys rotate by themselves as the simulator's clock passes the
	// interval.
	e.clock.Advance(6 * time.Hour)
	if fourth := e.kids("organizations"); len(fourth) != 2 || fourth[1] != third[0] || fourth[0] == third[0] {
		t.Fatalf("after the interval: %v, before %v", fourth, third)
	}
}

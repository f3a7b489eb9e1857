package oidc

import (
	"errors"
	"testing"
)

func TestIssuerMatches(t *testing.T) {
	cases := []struct {
		configured, discovered string
		want                   bool
	}{
		{"https://idp.example/t1/v2.0", "https://idp.example/t1/v2.0", true},
		{"https://idp.example/organizations/v2.0", "https://idp.example/{tenantid}/v2.0", true},
		{"https://idp.example/common/v2.0", "https://idp.example/{tenantid}/v2.0", true},
		// The template must be the configured issuer with one path
		// segment read as the placeholder, on the same host.
		{"https://idp.example/organizations/v2.0", "https://other.example/{tenantid}/v2.0", false},
		{"https://idp.example/a/b/v2.0", "https://idp.example/{tenantid}/v2.0", false},
		{"https://idp.example/v2.0", "https://idp.example/{tenantid}/v2.0", false},
		{"https://idp.example/t1/v2.0", "https://idp.example/t2/v2.0", false},
		{"https://idp.example/organizations/v2.0", "https://idp.example/{tenantid}/{tenantid}", false},
	}
	for _, c := range cases {
		if got := issuerMatches(c.configured, c.discovered); got != c.want {
			t.Errorf("issuerMatches(%q, %q) = %v, want %v", c.configured, c.discovered, got, c.want)
		}
	}
}

func TestRedirectURI(t *testing.T) {
	const configured = "https://steward.example/login"
	rp, err := New(Config{Issuer: "https://idp.example/organizations/v2.0", ClientID: "app", RedirectURL: configured})
	if err != nil {
		t.Fatal(err)
	}
	for _, asked := range []string{"", configured} {
		if got, err := rp.RedirectURI(asked); err != nil || got != configured {
			t.Errorf("RedirectURI(%q) = %q, %v", asked, got, err)
		}
	}
	if _, err := rp.RedirectURI("http://127.0.0.1:5173/cb"); !errors.Is(err, ErrRedirectURI) {
		t.Errorf("loopback redirect accepted without AllowLoopbackRedirect: %v", err)
	}
	dev, err := New(Config{Issuer: "https://idp.example/organizations/v2.0", ClientID: "app", RedirectURL: configured, AllowLoopbackRedirect: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := dev.RedirectURI("http://127.0.0.1:5173/cb"); err != nil || got != "http://127.0.0.1:5173/cb" {
		t.Errorf("loopback redirect in development: %q, %v", got, err)
	}
	for _, bad := range []string{"https://attacker.example/cb", "http://127.0.0.1:5173/cb#frag", "javascript:alert(1)"} {
		if _, err := dev.RedirectURI(bad); !errors.Is(err, ErrRedirectURI) {
			t.Errorf("RedirectURI(%q) accepted: %v", bad, err)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Issuer: "idp.example", ClientID: "app", RedirectURL: "https://s.example/login"},
		{Issuer: "https://idp.example/v2.0", RedirectURL: "https://s.example/login"},
		{Issuer: "https://idp.example/v2.0", ClientID: "app"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

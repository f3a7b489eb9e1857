package app

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/host/oidc"
)

// devOIDCClientID is the client id the host uses with the simulated
// identity provider, which accepts any client id in development.
const devOIDCClientID = "steward-dev"

// relyingParty builds the identity provider sign-in from the configuration:
// the configured issuer, or with the simulated cloud and none configured,
// the simulated Entra ID's multi-tenant ("organizations") endpoint, so any
// user of the world can sign in. Nil when there is neither.
func (h *Host) relyingParty(cfg config.Config) (*oidc.RelyingParty, error) {
	oc := oidc.Config{
		Issuer: cfg.OIDC.Issuer, ClientID: cfg.OIDC.ClientID, ClientSecret: cfg.OIDC.ClientSecret,
		RedirectURL: cfg.OIDC.RedirectURL, AllowLoopbackRedirect: cfg.Env == config.Development,
		HTTPClient: &http.Client{Timeout: 30 * time.Second},
	}
	if h.sim != nil {
		// The simulator serves TLS with a certificate of its own CA.
		oc.HTTPClient = h.sim.Sim.HTTPClient()
		if oc.Issuer == "" {
			oc.Issuer, oc.ClientID = h.sim.Sim.URLs[cloudsim.IdP]+"/organizations/v2.0", devOIDCClientID
		}
	}
	if oc.Issuer == "" {
		return nil, nil
	}
	if oc.RedirectURL == "" {
		oc.RedirectURL = "http://" + browserAddr(cfg.HTTPAddr) + "/login"
	}
	rp, err := oidc.New(oc)
	if err != nil {
		return nil, fmt.Errorf("identity provider (STEWARD_OIDC_*): %w", err)
	}
	return rp, nil
}

// browserAddr is the listen address as a browser on this machine reaches
// it: a wildcard host becomes the loopback address.
func browserAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// publicOrigin is the scheme and host browsers reach this host at: the
// identity provider redirect URL's (STEWARD_OIDC_REDIRECT_URL, required
// behind a proxy), or the listen address on this machine.
func publicOrigin(cfg config.Config) string {
	if u, err := url.Parse(cfg.OIDC.RedirectURL); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return "http://" + browserAddr(cfg.HTTPAddr)
}

// adminTenants are the managing directories, whose users' app role
// Governance.Admin makes a Steward admin: STEWARD_OIDC_ADMIN_TENANTS, or
// by default Steward's own directory, the tenant its cloud client signs in
// to (STEWARD_AZURE_TENANT_ID, or the simulated world's first tenant).
func adminTenants(cfg config.Config, cc cloud.Config) []string {
	if len(cfg.OIDC.AdminTenants) > 0 || cc.TenantID == "" {
		return cfg.OIDC.AdminTenants
	}
	return []string{cc.TenantID}
}

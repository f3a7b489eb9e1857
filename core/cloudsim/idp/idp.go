// Package idp is the simulated cloud's identity provider: an OpenID Connect
// provider shaped like the Microsoft identity platform (Entra ID v2.0
// endpoints), so Steward signs users in and gets tokens from it exactly as
// from login.microsoftonline.com.
//
// Every route lives under a directory tenant segment, as on Entra ID: a
// directory tenant id of the world (or one of the tenant's domains), or
// "organizations" / "common" for sign-in from any tenant. For those two the
// discovery document carries Entra ID's "{tenantid}" issuer placeholder and
// every token names the signing-in user's own tenant in iss and tid, so
// relying parties validate the issuer against tid as they must with Entra
// ID. One key set signs for every tenant.
//
// It implements the authorization code grant with PKCE (S256 only), the
// refresh token grant with rotating refresh tokens, and the client
// credentials grant the Azure SDK's secret, certificate and workload
// identity credentials use: clients authenticate with a secret or with a
// client assertion (RFC 7523), a JWT signed with one of their certificates
// or a federated token from another identity provider. A directory that has
// not consented to the application (world.Tenant.Consented) refuses it the
// client credentials grant, as Entra ID refuses an application without a
// service principal there, until an administrator grants it at the admin
// consent endpoint. Sign-in has no
// passwords: the user is chosen by login_hint or on a page listing the
// world's users. Clients built on MSAL (the Azure SDK's credentials) must
// disable instance discovery, which would otherwise ask the public cloud
// about this host.
//
// The ARM and Graph simulators authenticate bearer tokens with
// [Provider.VerifyAccessToken].
package idp

import (
	"crypto/x509"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// GraphResource is Microsoft Graph's resource identifier: the audience of
// access tokens requested with bare Graph permissions such as "User.Read",
// or with OpenID Connect scopes only, as on Entra ID.
const GraphResource = "https://graph.microsoft.com"

// The defaults of Options: Entra ID's lifetimes, and a daily key rotation
// so that a simulator left running makes clients refresh their keys.
const (
	DefaultTokenLifetime        = time.Hour
	DefaultRefreshTokenLifetime = 90 * 24 * time.Hour
	DefaultCodeLifetime         = 10 * time.Minute
	DefaultKeyRotation          = 24 * time.Hour
)

// The path segments that sign users in from any directory tenant.
const (
	organizations = "organizations"
	common        = "common"
)

// Options configure Register. Zero durations take the defaults.
type Options struct {
	// Clients are the registered applications by client id. With none,
	// any client id is accepted, with any secret or none, any http(s)
	// loopback redirect URI, any certificate assertion whose signature
	// verifies against the certificate it carries, and any well-formed
	// federated assertion, unverified: a development setting. See
	// [Client.Certificates] and [TokenExchangeAudience] for what is checked.
	Clients map[string]Client
	// TokenLifetime is how long ID and access tokens are valid.
	TokenLifetime time.Duration
	// RefreshTokenLifetime is how long a refresh token can be redeemed.
	RefreshTokenLifetime time.Duration
	// CodeLifetime is how long an authorization code can be redeemed.
	CodeLifetime time.Duration
	// KeyRotation is how often a new signing key replaces the current one;
	// the replaced key stays published for one more interval so tokens it
	// signed still verify.
	KeyRotation time.Duration
}

// Client is a registered application.
type Client struct {
	// Secret authenticates a confidential client; with neither a secret
	// nor certificates the client is public (it redeems codes with PKCE
	// alone and has no client credentials grant).
	Secret string
	// Certificates authenticate a confidential client by client assertion,
	// as certificates uploaded to an Entra ID application do: each is DER
	// or PEM. An assertion must be signed (PS256 or RS256) by one of their
	// keys, name that certificate in its header (x5c, or the x5t or
	// x5t#S256 thumbprint), have the client id as iss and sub, the token
	// endpoint or the tenant's issuer as aud, and be within its exp and
	// nbf, with five minutes' leeway for the client's clock. The
	// certificate must be within its validity period on the provider's
	// clock; its chain and revocation are not checked, and jti is not
	// remembered, so an assertion can be replayed until it expires.
	// Register panics on a certificate that does not parse.
	Certificates [][]byte
	// RedirectURIs are the exact redirect URIs the client may use.
	RedirectURIs []string
	// Roles are the application permissions granted to the client, carried
	// in the roles claim of its app-only access tokens.
	Roles []string
}

// Provider is the simulated identity provider. It is safe for concurrent
// use.
type Provider struct {
	sim  *cloudsim.Sim
	base string
	opts Options

	// certs are the registered clients' parsed Certificates by client id.
	// They do not change once registered, so they are read without mu.
	certs map[string][]*x509.Certificate

	mu      sync.Mutex
	keys    []*signingKey // the current key first, then the previous one
	codes   map[string]*authCode
	refresh map[string]*refreshGrant
}

// Register serves the identity provider on the simulator's IdP service,
// under /{tenant}/: v2.0/.well-known/openid-configuration,
// discovery/v2.0/keys, oauth2/v2.0/authorize, oauth2/v2.0/token and
// adminconsent.
func Register(s *cloudsim.Sim, opts Options) *Provider {
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = DefaultTokenLifetime
	}
	if opts.RefreshTokenLifetime <= 0 {
		opts.RefreshTokenLifetime = DefaultRefreshTokenLifetime
	}
	if opts.CodeLifetime <= 0 {
		opts.CodeLifetime = DefaultCodeLifetime
	}
	if opts.KeyRotation <= 0 {
		opts.KeyRotation = DefaultKeyRotation
	}
	p := &Provider{
		sim:     s,
		base:    s.URLs[cloudsim.IdP],
		opts:    opts,
		certs:   parseClientCertificates(opts.Clients),
		keys:    []*signingKey{newSigningKey(s.Now())},
		codes:   map[string]*authCode{},
		refresh: map[string]*refreshGrant{},
	}
	s.Handle(cloudsim.IdP, "GET /{tenant}/v2.0/.well-known/openid-configuration", p.handleDiscovery)
	s.Handle(cloudsim.IdP, "GET /{tenant}/discovery/v2.0/keys", p.handleKeys)
	s.Handle(cloudsim.IdP, "GET /{tenant}/oauth2/v2.0/authorize", p.handleAuthorize)
	s.Handle(cloudsim.IdP, "POST /{tenant}/oauth2/v2.0/token", p.handleToken)
	s.Handle(cloudsim.IdP, "GET /{tenant}/adminconsent", p.handleAdminConsent)
	return p
}

// Issuer is the issuer of the tokens of a directory tenant, and the URL
// OpenID Connect discovery starts from.
func (p *Provider) Issuer(tenantID string) string {
	return p.base + "/" + tenantID + "/v2.0"
}

// Users is the directory the provider signs users in from: the world's
// users.
func (p *Provider) Users() Users { return Users(p.sim.World().Users) }

// Users are directory users.
type Users []world.User

// ByEmail finds a user by e-mail address. Case does not matter, as for
// sign-in names on Entra ID.
func (us Users) ByEmail(email string) (world.User, bool) {
	for _, u := range us {
		if strings.EqualFold(u.Email, email) {
			return u, true
		}
	}
	return world.User{}, false
}

// Accounts lists the users with address email in directory dir, or in
// every directory when dir is empty. Two directories may each have a user
// of one address (a guest and its home account, say).
func (us Users) Accounts(email, dir string) Users {
	var out Users
	for _, u := range us {
		if strings.EqualFold(u.Email, email) && (dir == "" || strings.EqualFold(u.DirectoryTenantID, dir)) {
			out = append(out, u)
		}
	}
	return out
}

// InTenant lists the users of a directory tenant.
func (us Users) InTenant(tenantID string) Users {
	var in Users
	for _, u := range us {
		if strings.EqualFold(u.DirectoryTenantID, tenantID) {
			in = append(in, u)
		}
	}
	return in
}

// objectIDs is the namespace of the object ids derived for users and
// service principals.
var objectIDs = uuid.MustParse("6f1d2c54-3a0e-4f57-9a4b-2c8e51d0b7a3")

// ObjectID is a user's object id, the oid claim: derived from the tenant and
// the e-mail address so it is the same in every run and in every simulator
// that shows the user.
func ObjectID(u world.User) string {
	return uuid.NewSHA1(objectIDs, []byte("user:"+strings.ToLower(u.DirectoryTenantID+"/"+u.Email))).String()
}

// servicePrincipalID is the object id of a client's service principal in a
// tenant, the oid of its app-only tokens.
func servicePrincipalID(tenantID, clientID string) string {
	return uuid.NewSHA1(objectIDs, []byte("app:"+strings.ToLower(tenantID+"/"+clientID))).String()
}

func enabled(u world.User) bool { return u.AccountEnabled == nil || *u.AccountEnabled }

// tenant is a resolved {tenant} path segment.
type tenant struct {
	// id is the directory tenant id, or "organizations" or "common".
	id string
	// any is set for organizations and common, which accept users of every
	// directory tenant.
	any bool
}

// resolveTenant resolves a {tenant} path segment: a directory tenant id or
// domain of the world, organizations or common.
func (p *Provider) resolveTenant(seg string) (tenant, bool) {
	if strings.EqualFold(seg, organizations) || strings.EqualFold(seg, common) {
		return tenant{id: strings.ToLower(seg), any: true}, true
	}
	for _, t := range p.sim.World().Tenants {
		if strings.EqualFold(t.DirectoryTenantID, seg) {
			return tenant{id: t.DirectoryTenantID}, true
		}
		for _, d := range t.Domains {
			if strings.EqualFold(d, seg) {
				return tenant{id: t.DirectoryTenantID}, true
			}
		}
	}
	return tenant{}, false
}

// admits reports whether a user of directory tenant tid may sign in at t.
func (t tenant) admits(tid string) bool { return t.any || strings.EqualFold(t.id, tid) }

// AdmittedAt lists the users who may sign in at t.
func (us Users) AdmittedAt(t tenant) Users {
	var in Users
	for _, u := range us {
		if t.admits(u.DirectoryTenantID) {
			in = append(in, u)
		}
	}
	return in
}

// issuerTemplate is the issuer a discovery document announces: for
// organizations and common it has Entra ID's placeholder, as the tenant is
// only known once a user signs in.
func (p *Provider) issuerTemplate(t tenant) string {
	if t.any {
		return p.Issuer("{tenantid}")
	}
	return p.Issuer(t.id)
}

func (p *Provider) handleDiscovery(w http.ResponseWriter, r *http.Request) {
	seg := r.PathValue("tenant")
	t, ok := p.resolveTenant(seg)
	if !ok {
		p.writeTokenError(w, r, unknownTenant(seg))
		return
	}
	// Endpoints name the tenant by id even when asked by domain, as Entra
	// ID's do.
	prefix := p.base + "/" + t.id
	cloudsim.WriteJSON(w, map[string]any{
		"issuer":                                p.issuerTemplate(t),
		"authorization_endpoint":                prefix + "/oauth2/v2.0/authorize",
		"token_endpoint":                        prefix + "/oauth2/v2.0/token",
		"jwks_uri":                              prefix + "/discovery/v2.0/keys",
		"response_types_supported":              []string{"code"},
		"response_modes_supported":              []string{"query"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "private_key_jwt"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"claims_supported": []string{"iss", "aud", "sub", "oid", "tid", "nonce", "iat", "nbf", "exp",
			"name", "preferred_username", "email", "roles", "groups", "ver"},
	})
}

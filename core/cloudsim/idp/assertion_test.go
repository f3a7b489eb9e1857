package idp_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
)

const jwtBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// testCert is a self-signed certificate and its key, as an application's
// certificate credential.
type testCert struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
	pem  []byte
}

func newTestCert(t *testing.T, notBefore, notAfter time.Time) testCert {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "steward"},
		NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// x5c is the header MSAL sends with a certificate assertion: the chain and
// the SHA-256 thumbprint, both in standard base64.
func (c testCert) x5c() map[jose.HeaderKey]any {
	sum := sha256.Sum256(c.cert.Raw)
	return map[jose.HeaderKey]any{
		"x5c":      []string{base64.StdEncoding.EncodeToString(c.cert.Raw)},
		"x5t#S256": base64.StdEncoding.EncodeToString(sum[:]),
	}
}

// x5t is a header naming the certificate by its SHA-1 thumbprint alone, as
// RFC 7515 has it: base64url.
func (c testCert) x5t() map[jose.HeaderKey]any {
	sum := sha1.Sum(c.cert.Raw)
	return map[jose.HeaderKey]any{"x5t": base64.RawURLEncoding.EncodeToString(sum[:])}
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key crypto.Signer, header map[jose.HeaderKey]any, claims any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	for k, v := range header {
		opts = opts.WithHeader(k, v)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (e *env) tokenURL(tenant string) string {
	return e.sim.URLs[cloudsim.IdP] + "/" + tenant + "/oauth2/v2.0/token"
}

// assertionClaims are the claims MSAL puts in a certificate assertion.
func (e *env) assertionClaims(clientID string) jwt.Claims {
	now := e.clock.Now()
	return jwt.Claims{Issuer: clientID, Subject: clientID, Audience: jwt.Audience{e.tokenURL(contosoID)},
		NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(10 * time.Minute)), ID: rand.Text()}
}

// assertionGrant is a client credentials request authenticated by a client
// assertion.
func assertionGrant(clientID, assertion string) url.Values {
	return url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "scope": {armAPI + "/.default"},
		"client_assertion_type": {jwtBearer}, "client_assertion": {assertion}}
}

func TestCertificateAssertions(t *testing.T) {
	now := time.Now()
	registered := newTestCert(t, now.Add(-time.Hour), now.Add(24*time.Hour))
	other := newTestCert(t, now.Add(-time.Hour), now.Add(24*time.Hour))
	expired := newTestCert(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	e := start(t, idp.Options{Clients: map[string]idp.Client{
		"steward-cert":    {Certificates: [][]byte{registered.pem}, Roles: []string{"Governance.Collector"}},
		"steward-worker":  {Secret: "w0rker"},
		"steward-cli":     {RedirectURIs: []string{"http://localhost:8400/callback"}},
		"steward-expired": {Certificates: [][]byte{expired.cert.Raw}},
	}})
	const id = "steward-cert"
	good := e.assertionClaims(id)

	// As MSAL sends it: PS256 with the chain.
	status, body := e.postToken(contosoID, assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), good)))
	if status != http.StatusOK {
		t.Fatalf("certificate assertion: %d %v", status, body)
	}
	if status, c, msg := e.probe(cloudsim.ARM, body["access_token"].(string)); status != http.StatusOK ||
		c.AppID != id || c.IDType != "app" || !slices.Equal(c.Roles, []string{"Governance.Collector"}) {
		t.Fatalf("ARM answered %d %q %+v", status, msg, c)
	}

	withClaims := func(mutate func(*jwt.Claims)) jwt.Claims {
		c := e.assertionClaims(id)
		mutate(&c)
		return c
	}
	aud := func(aud string) jwt.Claims { return withClaims(func(c *jwt.Claims) { c.Audience = jwt.Audience{aud} }) }
	for name, tc := range map[string]struct {
		tenant    string
		assertion string
	}{
		"RS256, named by x5t alone": {contosoID, sign(t, jose.RS256, registered.key, registered.x5t(), good)},
		"the issuer as audience":    {contosoID, sign(t, jose.PS256, registered.key, registered.x5c(), aud(e.p.Issuer(contosoID)))},
		"the v1 token endpoint": {contosoID, sign(t, jose.PS256, registered.key, registered.x5c(),
			aud(e.sim.URLs[cloudsim.IdP]+"/"+contosoID+"/oauth2/token"))},
		"the tenant named by domain": {"contoso.example", sign(t, jose.PS256, registered.key, registered.x5c(), aud(e.tokenURL("contoso.example")))},
		"one of two audiences": {contosoID, sign(t, jose.PS256, registered.key, registered.x5c(),
			withClaims(func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://elsewhere.example", e.tokenURL(contosoID)} }))},
		"expired, within the leeway": {contosoID, sign(t, jose.PS256, registered.key, registered.x5c(),
			withClaims(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.clock.Now().Add(-time.Minute)) }))},
		"not yet valid, within the leeway": {contosoID, sign(t, jose.PS256, registered.key, registered.x5c(),
			withClaims(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(e.clock.Now().Add(time.Minute)) }))},
	} {
		if status, body := e.postToken(tc.tenant, assertionGrant(id, tc.assertion)); status != http.StatusOK {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}

	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		form   url.Values
		status int
		code   string
		aadsts int
	}{
		"bad signature":            {assertionGrant(id, sign(t, jose.PS256, other.key, registered.x5c(), good)), 401, "invalid_client", 700027},
		"unregistered certificate": {assertionGrant(id, sign(t, jose.PS256, other.key, other.x5c(), good)), 401, "invalid_client", 700027},
		"unregistered thumbprint":  {assertionGrant(id, sign(t, jose.RS256, other.key, other.x5t(), good)), 401, "invalid_client", 700027},
		"thumbprint of another":    {assertionGrant(id, sign(t, jose.PS256, registered.key, map[jose.HeaderKey]any{"x5c": registered.x5c()["x5c"], "x5t#S256": other.x5c()["x5t#S256"]}, good)), 401, "invalid_client", 700027},
		"expired certificate":      {assertionGrant("steward-expired", sign(t, jose.PS256, expired.key, expired.x5c(), e.assertionClaims("steward-expired"))), 401, "invalid_client", 700027},
		"expired":                  {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.clock.Now().Add(-10 * time.Minute)) }))), 401, "invalid_client", 700024},
		"not yet valid":            {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(e.clock.Now().Add(10 * time.Minute)) }))), 401, "invalid_client", 700024},
		"no expiry":                {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.Expiry = nil }))), 401, "invalid_client", 50027},
		"wrong audience": {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) {
			c.Audience = jwt.Audience{"https://login.microsoftonline.com/" + contosoID + "/oauth2/v2.0/token"}
		}))), 401, "invalid_client", 700023},
		"another tenant":        {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.Audience = jwt.Audience{e.tokenURL(fabrikamID)} }))), 401, "invalid_client", 700023},
		"iss is not the client": {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.Issuer = "steward-worker" }))), 401, "invalid_client", 700021},
		"sub is not the client": {assertionGrant(id, sign(t, jose.PS256, registered.key, registered.x5c(), withClaims(func(c *jwt.Claims) { c.Subject = "steward-worker" }))), 401, "invalid_client", 700021},
		"ES256":                 {assertionGrant(id, sign(t, jose.ES256, ec, registered.x5c(), good)), 401, "invalid_client", 50027},
		"not a JWT":             {assertionGrant(id, "not-a-jwt"), 401, "invalid_client", 50027},
		"a federated assertion": {assertionGrant(id, sign(t, jose.ES256, ec, nil, federatedClaims(e.clock.Now()))), 401, "invalid_client", 70021},
		"public client":         {assertionGrant("steward-cli", sign(t, jose.PS256, registered.key, registered.x5c(), e.assertionClaims("steward-cli"))), 401, "invalid_client", 700025},
		"unknown client":        {assertionGrant("nobody", sign(t, jose.PS256, registered.key, registered.x5c(), e.assertionClaims("nobody"))), 400, "unauthorized_client", 700016},
		"secret client":         {assertionGrant("steward-worker", sign(t, jose.PS256, registered.key, registered.x5c(), e.assertionClaims("steward-worker"))), 401, "invalid_client", 700027},
		"no client id":          {withParam(assertionGrant(id, "a.b.c"), "client_id", ""), 400, "invalid_request", 900144},
		"no assertion":          {withParam(assertionGrant(id, ""), "client_assertion", ""), 400, "invalid_request", 900144},
		"other assertion type":  {withParam(assertionGrant(id, "a.b.c"), "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"), 400, "invalid_request", 9002313},
		"secret and assertion":  {withParam(assertionGrant(id, "a.b.c"), "client_secret", "w0rker"), 400, "invalid_request", 9002313},
		"certificate client, secret": {url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {"guess"},
			"scope": {armAPI + "/.default"}}, 401, "invalid_client", 7000215},
		"certificate client, nothing": {url.Values{"grant_type": {"client_credentials"}, "client_id": {id},
			"scope": {armAPI + "/.default"}}, 401, "invalid_client", 7000218},
	} {
		if status, body := e.postToken(contosoID, tc.form); !isError(status, body, tc.status, tc.code, tc.aadsts) {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}

	// The provider's clock decides expiry: a good assertion fails once it
	// has passed exp and the leeway.
	late := sign(t, jose.PS256, registered.key, registered.x5c(), e.assertionClaims(id))
	e.clock.Advance(16 * time.Minute)
	if status, body := e.postToken(contosoID, assertionGrant(id, late)); !isError(status, body, 401, "invalid_client", 700024) {
		t.Errorf("past exp on the provider's clock: %d %v", status, body)
	}
}

func TestCertificateAssertionsInDevelopment(t *testing.T) {
	now := time.Now()
	a := newTestCert(t, now.Add(-time.Hour), now.Add(24*time.Hour))
	b := newTestCert(t, now.Add(-time.Hour), now.Add(24*time.Hour))
	e := start(t, idp.Options{})
	claims := e.assertionClaims("any-app")

	status, body := e.postToken(contosoID, assertionGrant("any-app", sign(t, jose.PS256, a.key, a.x5c(), claims)))
	if status != http.StatusOK {
		t.Fatalf("self-consistent assertion: %d %v", status, body)
	}
	if status, c, msg := e.probe(cloudsim.ARM, body["access_token"].(string)); status != http.StatusOK || c.AppID != "any-app" {
		t.Fatalf("ARM answered %d %q %+v", status, msg, c)
	}
	for name, tc := range map[string]struct {
		assertion string
		aadsts    int
	}{
		// Without the chain there is no certificate to check against.
		"x5t alone":     {sign(t, jose.RS256, a.key, a.x5t(), claims), 700027},
		"bad signature": {sign(t, jose.PS256, b.key, a.x5c(), claims), 700027},
		"iss is not the client": {sign(t, jose.PS256, a.key, a.x5c(), func() jwt.Claims {
			c := claims
			c.Issuer = "another-app"
			return c
		}()), 700021},
	} {
		if status, body := e.postToken(contosoID, assertionGrant("any-app", tc.assertion)); !isError(status, body, 401, "invalid_client", tc.aadsts) {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
}

// federatedClaims are the claims of an AKS projected service-account
// token.
func federatedClaims(now time.Time) jwt.Claims {
	return jwt.Claims{Issuer: "https://oidc.prod-aks.azure.com/" + contosoID + "/", Subject: "system:serviceaccount:steward:collector",
		Audience: jwt.Audience{idp.TokenExchangeAudience}, IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
}

func TestFederatedAssertions(t *testing.T) {
	e := start(t, idp.Options{})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	header := map[jose.HeaderKey]any{"kid": "service-account-key"}
	good := federatedClaims(e.clock.Now())
	for name, a := range map[string]string{
		"ES256": sign(t, jose.ES256, key, header, good),
		"RS256": sign(t, jose.RS256, rsaKey, header, good),
	} {
		status, body := e.postToken(contosoID, assertionGrant("workload-app", a))
		if status != http.StatusOK {
			t.Fatalf("%s federated assertion: %d %v", name, status, body)
		}
		if status, c, msg := e.probe(cloudsim.ARM, body["access_token"].(string)); status != http.StatusOK || c.AppID != "workload-app" {
			t.Fatalf("ARM answered %d %q %+v", status, msg, c)
		}
	}

	mutated := func(mutate func(*jwt.Claims)) string {
		c := federatedClaims(e.clock.Now())
		mutate(&c)
		return sign(t, jose.ES256, key, header, c)
	}
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://issuer.example","sub":"s","aud":"api://AzureADTokenExchange","exp":4102444800}`)) + "."
	for name, tc := range map[string]struct {
		assertion string
		aadsts    int
	}{
		"wrong audience":   {mutated(func(c *jwt.Claims) { c.Audience = jwt.Audience{armAPI} }), 700212},
		"no subject":       {mutated(func(c *jwt.Claims) { c.Subject = "" }), 700213},
		"issuer not https": {mutated(func(c *jwt.Claims) { c.Issuer = "http://oidc.example/" }), 700211},
		"issuer not a URL": {mutated(func(c *jwt.Claims) { c.Issuer = "kubernetes" }), 700211},
		"expired":          {mutated(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(e.clock.Now().Add(-10 * time.Minute)) }), 700024},
		"no expiry":        {mutated(func(c *jwt.Claims) { c.Expiry = nil }), 50027},
		"alg none":         {unsigned, 50027},
		"PS256":            {sign(t, jose.PS256, rsaKey, header, good), 50027},
	} {
		if status, body := e.postToken(contosoID, assertionGrant("workload-app", tc.assertion)); !isError(status, body, 401, "invalid_client", tc.aadsts) {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
}

// withParam is form with key set to v, or removed when v is empty.
func withParam(form url.Values, key, v string) url.Values {
	f := url.Values{}
	for k, vs := range form {
		f[k] = vs
	}
	if v == "" {
		f.Del(key)
	} else {
		f.Set(key, v)
	}
	return f
}

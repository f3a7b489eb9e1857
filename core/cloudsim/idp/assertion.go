package idp

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwtBearer is the client_assertion_type of a JWT client assertion (RFC
// 7523), the only one Entra ID takes.
const jwtBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// TokenExchangeAudience is the audience a federated assertion must have:
// Entra ID's default for federated identity credentials, and the audience
// AKS projects workload identity service-account tokens for.
//
// A federated assertion, one whose header names no certificate, is taken
// only in development mode (no registered clients), and only its form is
// checked: it must be an RS256 or ES256 JWS whose iss is an https URL,
// whose sub is not empty, whose aud includes TokenExchangeAudience and
// whose exp (and nbf, if any) admit the present time. Its signature is not
// verified (the issuer's keys are never fetched), and no issuer or subject
// is matched against a federated credential of the application. A
// registered client's federated assertion is refused as Entra ID refuses
// one that no federated credential of the application matches.
const TokenExchangeAudience = "api://AzureADTokenExchange"

// assertionSkew is how far a client assertion's times may be from the
// provider's clock, which, unlike the simulated services, the client does
// not share. Entra ID allows five minutes.
const assertionSkew = 5 * time.Minute

// The signature algorithms of client assertions. Entra ID takes RSA
// certificates only, and MSAL signs with PS256 (RS256 for ADFS);
// Kubernetes signs service-account tokens with RS256 or ES256.
var (
	certificateAlgorithms = []jose.SignatureAlgorithm{jose.PS256, jose.RS256}
	federatedAlgorithms   = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}
)

// assertionHeader is the part of a client assertion's JOSE header that
// names the certificate it was signed with, read before the signature is
// checked to find the key that should check it. go-jose keeps a parsed
// x5c to itself, so the header is decoded here.
type assertionHeader struct {
	// X5c is the certificate chain, leaf first, each certificate base64
	// (not base64url) DER, as RFC 7515 has it.
	X5c []string `json:"x5c"`
	// X5t and X5tS256 are the SHA-1 and SHA-256 thumbprints of the signing
	// certificate.
	X5t     string `json:"x5t"`
	X5tS256 string `json:"x5t#S256"`
}

// namesCertificate tells a certificate assertion from a federated one.
func (h assertionHeader) namesCertificate() bool {
	return len(h.X5c) > 0 || h.X5t != "" || h.X5tS256 != ""
}

// authenticateAssertion authenticates a client by its client assertion: a
// JWT signed with one of its certificates (the certificate credential), or
// a token from another identity provider (workload identity).
func (p *Provider) authenticateAssertion(r *http.Request, t tenant) (string, Client, *oauthError) {
	typ, raw, id := r.PostFormValue("client_assertion_type"), r.PostFormValue("client_assertion"), r.PostFormValue("client_id")
	_, _, basic := r.BasicAuth()
	switch {
	case typ == "":
		return "", Client{}, missingParameter("client_assertion_type")
	case typ != jwtBearer:
		return "", Client{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. The client_assertion_type must be '%s', not '%s'.", jwtBearer, typ)
	case raw == "":
		return "", Client{}, missingParameter("client_assertion")
	case basic || r.PostFormValue("client_secret") != "":
		return "", Client{}, newError(http.StatusBadRequest, "invalid_request", 9002313,
			"Invalid request. A client authenticates with either a client secret or a client assertion, not both.")
	case id == "":
		return "", Client{}, missingParameter("client_id")
	}
	var c Client
	if len(p.opts.Clients) > 0 {
		var ok bool
		if c, ok = p.opts.Clients[id]; !ok {
			return "", Client{}, unknownClient(id)
		}
		if !c.confidential() {
			return "", Client{}, publicClient()
		}
	}
	h, oe := readAssertionHeader(raw)
	if oe != nil {
		return "", Client{}, oe
	}
	if h.namesCertificate() {
		oe = p.verifyCertificateAssertion(raw, h, id, p.assertionAudiences(r.PathValue("tenant"), t))
	} else {
		oe = p.verifyFederatedAssertion(raw)
	}
	if oe != nil {
		return "", Client{}, oe
	}
	return id, c, nil
}

func readAssertionHeader(raw string) (assertionHeader, *oauthError) {
	var h assertionHeader
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return h, malformedAssertion(errors.New("not a signed JWT in compact form"))
	}
	js, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err == nil {
		err = json.Unmarshal(js, &h)
	}
	if err != nil {
		return h, malformedAssertion(fmt.Errorf("header: %w", err))
	}
	return h, nil
}

// verifyCertificateAssertion checks a certificate assertion as
// Client.Certificates describes.
func (p *Provider) verifyCertificateAssertion(raw string, h assertionHeader, clientID string, audiences []string) *oauthError {
	tok, err := jwt.ParseSigned(raw, certificateAlgorithms)
	if err != nil {
		return malformedAssertion(err)
	}
	cert, oe := p.assertionCertificate(h, clientID)
	if oe != nil {
		return oe
	}
	var claims jwt.Claims
	if err := tok.Claims(cert.PublicKey, &claims); err != nil {
		return newError(http.StatusUnauthorized, "invalid_client", 700027,
			"Client assertion failed signature validation. [Reason - %v, Thumbprint of key used by client: '%s']", err, thumbprint(cert))
	}
	if claims.Issuer != clientID || claims.Subject != clientID {
		return newError(http.StatusUnauthorized, "invalid_client", 700021,
			"Client assertion application identifier doesn't match 'client_id' parameter. The assertion's iss is '%s' and its sub '%s', not '%s'.",
			claims.Issuer, claims.Subject, clientID)
	}
	if !slices.ContainsFunc(claims.Audience, func(a string) bool {
		return slices.ContainsFunc(audiences, func(want string) bool { return strings.EqualFold(a, want) })
	}) {
		return newError(http.StatusUnauthorized, "invalid_client", 700023,
			"Client assertion audience claim does not match Realm issuer. The assertion's aud is '%s', not the token endpoint '%s'.",
			strings.Join(claims.Audience, " "), audiences[0])
	}
	return p.checkAssertionTimes(claims)
}

// assertionCertificate finds the certificate an assertion names: the one
// it carries in x5c, which a registered client must have registered, or
// else the registered one its thumbprint names.
func (p *Provider) assertionCertificate(h assertionHeader, clientID string) (*x509.Certificate, *oauthError) {
	registered := p.certs[clientID]
	var cert *x509.Certificate
	if len(h.X5c) > 0 {
		der, err := base64.StdEncoding.DecodeString(h.X5c[0])
		if err == nil {
			cert, err = x509.ParseCertificate(der)
		}
		if err != nil {
			return nil, malformedAssertion(fmt.Errorf("x5c: %w", err))
		}
		if h.X5tS256 != "" && !thumbprintIs(h.X5tS256, sha256Of(cert.Raw)) || h.X5t != "" && !thumbprintIs(h.X5t, sha1Of(cert.Raw)) {
			return nil, newError(http.StatusUnauthorized, "invalid_client", 700027,
				"Client assertion failed signature validation. [Reason - The thumbprint in the header is not that of the certificate in x5c., Thumbprint of key used by client: '%s']",
				thumbprint(cert))
		}
		if len(p.opts.Clients) > 0 && !slices.ContainsFunc(registered, cert.Equal) {
			return nil, keyNotFound(thumbprint(cert))
		}
	} else {
		i := slices.IndexFunc(registered, func(c *x509.Certificate) bool {
			return thumbprintIs(h.X5tS256, sha256Of(c.Raw)) || thumbprintIs(h.X5t, sha1Of(c.Raw))
		})
		if i < 0 {
			return nil, keyNotFound(cmp.Or(h.X5t, h.X5tS256))
		}
		cert = registered[i]
	}
	if now := p.sim.Now(); now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, newError(http.StatusUnauthorized, "invalid_client", 700027,
			"Client assertion contains an invalid signature. [Reason - The key used is expired., Thumbprint of key used by client: '%s', Found key 'Start=%s, End=%s']",
			thumbprint(cert), cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

// verifyFederatedAssertion checks a federated assertion's form, as
// TokenExchangeAudience describes.
func (p *Provider) verifyFederatedAssertion(raw string) *oauthError {
	tok, err := jwt.ParseSigned(raw, federatedAlgorithms)
	if err != nil {
		return malformedAssertion(err)
	}
	var claims jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&claims); err != nil {
		return malformedAssertion(err)
	}
	aud := strings.Join(claims.Audience, " ")
	if len(p.opts.Clients) > 0 {
		return newError(http.StatusUnauthorized, "invalid_client", 70021,
			"No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.",
			claims.Issuer, claims.Subject, aud)
	}
	if u, err := url.Parse(claims.Issuer); err != nil || u.Scheme != "https" || u.Host == "" {
		return newError(http.StatusUnauthorized, "invalid_client", 700211,
			"No matching federated identity record found for presented assertion issuer '%s'.", claims.Issuer)
	}
	if claims.Subject == "" {
		return newError(http.StatusUnauthorized, "invalid_client", 700213,
			"No matching federated identity record found for presented assertion subject ''.")
	}
	if !claims.Audience.Contains(TokenExchangeAudience) {
		return newError(http.StatusUnauthorized, "invalid_client", 700212,
			"No matching federated identity record found for presented assertion audience '%s'.", aud)
	}
	return p.checkAssertionTimes(claims)
}

// checkAssertionTimes checks that an assertion has an expiry and that the
// provider's clock is within its exp and nbf, give or take assertionSkew.
func (p *Provider) checkAssertionTimes(c jwt.Claims) *oauthError {
	if c.Expiry == nil {
		return malformedAssertion(errors.New("the assertion has no exp claim"))
	}
	now := p.sim.Now()
	valid := "expiry time of assertion " + c.Expiry.Time().UTC().Format(time.RFC3339)
	if c.NotBefore != nil {
		valid = "assertion valid from " + c.NotBefore.Time().UTC().Format(time.RFC3339) + ", " + valid
	}
	if !now.Before(c.Expiry.Time().Add(assertionSkew)) || c.NotBefore != nil && now.Add(assertionSkew).Before(c.NotBefore.Time()) {
		return newError(http.StatusUnauthorized, "invalid_client", 700024,
			"Client assertion is not within its valid time range. Current time: %s, %s.", now.UTC().Format(time.RFC3339), valid)
	}
	return nil
}

// assertionAudiences are the audiences a certificate assertion may have,
// the token endpoint first: Entra ID takes its v2.0 token endpoint (what
// MSAL uses), its v1 one, or the tenant's issuer, naming the tenant as
// the request's path does or by its id.
func (p *Provider) assertionAudiences(seg string, t tenant) []string {
	var auds []string
	for _, s := range []string{seg, t.id} {
		prefix := p.base + "/" + s
		auds = append(auds, prefix+"/oauth2/v2.0/token", prefix+"/oauth2/token", p.Issuer(s))
	}
	return auds
}

func malformedAssertion(err error) *oauthError {
	return newError(http.StatusUnauthorized, "invalid_client", 50027, "JWT token is invalid or malformed: %v.", err)
}

func keyNotFound(thumbprint string) *oauthError {
	return newError(http.StatusUnauthorized, "invalid_client", 700027,
		"The certificate with identifier used to sign the client assertion is not registered on application. [Reason - The key was not found., Thumbprint of key used by client: '%s']",
		thumbprint)
}

// thumbprint is a certificate's SHA-1 thumbprint in hex, as Entra ID's
// errors and portal show it.
func thumbprint(c *x509.Certificate) string {
	return strings.ToUpper(hex.EncodeToString(sha1Of(c.Raw)))
}

func sha1Of(b []byte) []byte {
	sum := sha1.Sum(b)
	return sum[:]
}

func sha256Of(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}

// thumbprintIs reports whether a header's thumbprint is sum. RFC 7515 has
// it base64url, but MSAL sends standard base64, which Entra ID takes too.
func thumbprintIs(value string, sum []byte) bool {
	if value == "" {
		return false
	}
	value = strings.TrimRight(value, "=")
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(value); err == nil {
			return bytes.Equal(b, sum)
		}
	}
	return false
}

// parseClientCertificates parses the registered clients' certificates.
// They are the caller's code, not input, so one that does not parse is a
// bug, reported at once.
func parseClientCertificates(clients map[string]Client) map[string][]*x509.Certificate {
	certs := map[string][]*x509.Certificate{}
	for id, c := range clients {
		for i, raw := range c.Certificates {
			if block, _ := pem.Decode(raw); block != nil {
				raw = block.Bytes
			}
			cert, err := x509.ParseCertificate(raw)
			if err != nil {
				panic(fmt.Sprintf("idp: client %q: certificate %d: %v", id, i, err))
			}
			certs[id] = append(certs[id], cert)
		}
	}
	return certs
}

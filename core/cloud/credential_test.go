package cloud_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
)

// startCredentialSim serves the base world with the real identity provider
// and ARM, with clients registered (none is development mode). Unlike
// startSim it runs on the wall clock: the Azure SDK stamps its certificate
// assertions with the wall clock, and the identity provider checks them
// against its own, as Entra ID does, so simNow would find them expired.
func startCredentialSim(t *testing.T, clients map[string]idp.Client) *cloudsim.Sim {
	t.Helper()
	s, p := simtest.Start(t, baseWorld(), cloudsim.Options{}, idp.Options{Clients: clients})
	arm.Register(s, p)
	return s
}

// writeCertificate writes a new self-signed certificate and its private key
// to a PEM file, as an operator would deploy them, and returns the file's
// path and the certificate alone, as uploaded to the application.
func writeCertificate(t *testing.T) (string, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "steward"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	path := filepath.Join(t.TempDir(), "steward.pem")
	if err := os.WriteFile(path, append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, certPEM
}

func certificateConfig(s *cloudsim.Sim, path string) cloud.Config {
	cfg := simConfig(s)
	cfg.Credential, cfg.ClientSecret, cfg.CertificatePath = cloud.CredentialCertificate, "", path
	return cfg
}

// authFailure asserts that listing subscriptions fails in the credential,
// with Entra ID's error code, before any request reaches ARM.
func authFailure(t *testing.T, s *cloudsim.Sim, cfg cloud.Config, aadsts string) {
	t.Helper()
	c, err := cloud.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Faults.Hits(cloudsim.ARM, "/")
	_, err = listSubscriptions(c)
	var authErr *azidentity.AuthenticationFailedError
	if !errors.As(err, &authErr) || authErr.RawResponse == nil || authErr.RawResponse.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(err.Error(), aadsts) {
		t.Fatalf("err %v, want the credential's AuthenticationFailedError with %s", err, aadsts)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, "/") - before; hits != 0 {
		t.Fatalf("%d requests reached ARM without a token", hits)
	}
}

func TestCertificateCredential(t *testing.T) {
	path, certPEM := writeCertificate(t)
	otherPath, _ := writeCertificate(t)
	s := startCredentialSim(t, map[string]idp.Client{clientID: {Certificates: [][]byte{certPEM}}})

	c, err := cloud.New(certificateConfig(s, path))
	if err != nil {
		t.Fatal(err)
	}
	subs, err := listSubscriptions(c)
	if err != nil || len(subs) != 2 {
		t.Fatalf("with the registered certificate: %d subscriptions, %v", len(subs), err)
	}

	// A certificate the application does not have: Entra ID's "key not
	// found".
	authFailure(t, s, certificateConfig(s, otherPath), "AADSTS700027")

	// In development mode any certificate whose key signed the assertion
	// will do.
	dev := startCredentialSim(t, nil)
	if c, err = cloud.New(certificateConfig(dev, otherPath)); err != nil {
		t.Fatal(err)
	}
	if subs, err = listSubscriptions(c); err != nil || len(subs) != 2 {
		t.Fatalf("in development mode: %d subscriptions, %v", len(subs), err)
	}
}

// writeServiceAccountToken writes a federated token shaped like the one
// AKS projects into a workload identity pod.
func writeServiceAccountToken(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	token, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer:   "https://oidc.prod-aks.azure.com/" + managingTenant + "/",
		Subject:  "system:serviceaccount:steward:steward",
		Audience: jwt.Audience{idp.TokenExchangeAudience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func workloadConfig(s *cloudsim.Sim, path string) cloud.Config {
	cfg := simConfig(s)
	cfg.Credential, cfg.ClientSecret, cfg.TokenFilePath = cloud.CredentialWorkloadIdentity, "", path
	return cfg
}

func TestWorkloadIdentityCredential(t *testing.T) {
	path := writeServiceAccountToken(t)
	s := startCredentialSim(t, nil)
	c, err := cloud.New(workloadConfig(s, path))
	if err != nil {
		t.Fatal(err)
	}
	subs, err := listSubscriptions(c)
	if err != nil || len(subs) != 2 {
		t.Fatalf("with a federated token: %d subscriptions, %v", len(subs), err)
	}

	// A registered application has no federated credential in the
	// simulator, so the token matches none.
	registered := startCredentialSim(t, map[string]idp.Client{clientID: {Secret: clientSecret}})
	authFailure(t, registered, workloadConfig(registered, path), "AADSTS70021")

	missing := filepath.Join(t.TempDir(), "not-mounted", "azure-identity-token")
	_, err = cloud.New(workloadConfig(s, missing))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("missing token file: %v, want a one-line error naming the file", err)
	}
	empty := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = cloud.New(workloadConfig(s, empty)); err == nil || !strings.Contains(err.Error(), empty) {
		t.Fatalf("empty token file: %v, want an error naming the file", err)
	}
}

func TestCredentialSettings(t *testing.T) {
	certPath, certPEM := writeCertificate(t)
	tokenPath := writeServiceAccountToken(t)
	dir := t.TempDir()
	keyless := filepath.Join(dir, "certificate-only.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	for path, data := range map[string][]byte{keyless: certPEM, garbage: []byte("not a certificate")} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	absent := filepath.Join(dir, "absent.pem")

	base := cloud.Config{Provider: cloud.ProviderAzure, TenantID: managingTenant, ClientID: clientID}
	certificate := func(path string) func(*cloud.Config) {
		return func(c *cloud.Config) { c.Credential, c.CertificatePath = cloud.CredentialCertificate, path }
	}
	for name, tc := range map[string]struct {
		mutate func(*cloud.Config)
		want   []string
	}{
		"secret without the secret": {func(c *cloud.Config) { c.Credential = cloud.CredentialClientSecret },
			[]string{"the client secret credential needs the client secret"}},
		"secret with nothing": {func(c *cloud.Config) { c.TenantID, c.ClientID = "", "" },
			[]string{"the client secret credential needs the tenant id, client id and client secret"}},
		"certificate without a path": {certificate(""), []string{"the certificate credential needs the certificate path"}},
		"certificate without a client": {func(c *cloud.Config) {
			c.Credential, c.ClientID, c.CertificatePath = cloud.CredentialCertificate, "", certPath
		}, []string{"the certificate credential needs the client id"}},
		"certificate file absent":            {certificate(absent), []string{absent, "no such file"}},
		"certificate file not a certificate": {certificate(garbage), []string{garbage, "PEM", "PKCS#12"}},
		"certificate without its key":        {certificate(keyless), []string{keyless, "found no private key"}},
		"workload identity without a token file": {func(c *cloud.Config) { c.Credential = cloud.CredentialWorkloadIdentity },
			[]string{"the workload identity credential needs the token file path"}},
		"workload identity without a tenant": {func(c *cloud.Config) {
			c.Credential, c.TenantID, c.TokenFilePath = cloud.CredentialWorkloadIdentity, "", tokenPath
		}, []string{"the workload identity credential needs the tenant id"}},
	} {
		cfg := base
		tc.mutate(&cfg)
		_, err := cloud.New(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "cloud: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line error", name, err)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want it to say %q", name, err, want)
			}
		}
	}

	// Against Azure itself, with instance discovery on, both build.
	for kind, mutate := range map[cloud.CredentialKind]func(*cloud.Config){
		cloud.CredentialCertificate:      func(c *cloud.Config) { c.CertificatePath = certPath },
		cloud.CredentialWorkloadIdentity: func(c *cloud.Config) { c.TokenFilePath = tokenPath },
	} {
		cfg := base
		cfg.Credential = kind
		mutate(&cfg)
		if _, err := cloud.New(cfg); err != nil {
			t.Errorf("credential %q: %v", kind, err)
		}
	}
}

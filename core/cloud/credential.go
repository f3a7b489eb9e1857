package cloud

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// credentials are the application's credentials, one per directory tenant
// it authenticates in: the managing tenant's, and each customer
// directory's that Steward reads with its own token (Graph always,
// Resource Manager for the tenants not delegated through Lighthouse). A
// multi-tenant application consented in a customer's directory gets
// tokens there with the same secret, certificate or federated token.
type credentials struct {
	cfg                      Config
	opts                     policy.ClientOptions
	disableInstanceDiscovery bool
	managingTenant           string
	managing                 azcore.TokenCredential

	mu       sync.Mutex
	byTenant map[string]azcore.TokenCredential
}

// newCredentials builds the managing tenant's credential; the others are
// built on first use.
func newCredentials(cfg Config, opts policy.ClientOptions, disableInstanceDiscovery bool) (*credentials, error) {
	managing, err := newCredential(cfg, opts, disableInstanceDiscovery)
	if err != nil {
		return nil, err
	}
	return &credentials{cfg: cfg, opts: opts, disableInstanceDiscovery: disableInstanceDiscovery,
		managingTenant: cfg.TenantID, managing: managing, byTenant: map[string]azcore.TokenCredential{}}, nil
}

// in is the credential in a directory tenant: the managing one in the
// managing tenant, otherwise the configured kind with that tenant id,
// built on first use and kept so that it caches its tokens across calls.
func (c *credentials) in(tenantID string) (azcore.TokenCredential, error) {
	switch {
	case tenantID == "":
		return nil, errors.New("no tenant id")
	case strings.EqualFold(tenantID, c.managingTenant):
		return c.managing, nil
	case c.cfg.Credential == CredentialManagedIdentity:
		return nil, fmt.Errorf("a managed identity gets tokens in its own tenant only, not in %s", tenantID)
	}
	key := strings.ToLower(tenantID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cred, ok := c.byTenant[key]; ok {
		return cred, nil
	}
	cfg := c.cfg
	cfg.TenantID = tenantID
	cred, err := newCredential(cfg, c.opts, c.disableInstanceDiscovery)
	if err != nil {
		return nil, err
	}
	c.byTenant[key] = cred
	return cred, nil
}

// newCredential builds the configured credential on the shared client
// options, so token requests use the same transport, CA and retries as
// the calls they authorise. Instance discovery asks the public cloud
// whether an authority is genuine; for any other authority (the simulator,
// a private cloud) it must be off or the first token request fails.
func newCredential(cfg Config, opts policy.ClientOptions, disableInstanceDiscovery bool) (azcore.TokenCredential, error) {
	switch kind := cfg.Credential; kind {
	case "", CredentialClientSecret:
		if err := requireSettings("client secret", setting{"tenant id", cfg.TenantID}, setting{"client id", cfg.ClientID},
			setting{"client secret", cfg.ClientSecret}); err != nil {
			return nil, err
		}
		cred, err := azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, cfg.ClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: disableInstanceDiscovery})
		if err != nil {
			return nil, fmt.Errorf("cloud: client secret credential: %w", err)
		}
		return cred, nil
	case CredentialManagedIdentity:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: opts}
		if cfg.ClientID != "" {
			o.ID = azidentity.ClientID(cfg.ClientID)
		}
		cred, err := azidentity.NewManagedIdentityCredential(o)
		if err != nil {
			return nil, fmt.Errorf("cloud: managed identity credential: %w", err)
		}
		return cred, nil
	case CredentialCertificate:
		return newCertificateCredential(cfg, opts, disableInstanceDiscovery)
	case CredentialWorkloadIdentity:
		return newWorkloadIdentityCredential(cfg, opts, disableInstanceDiscovery)
	default:
		return nil, fmt.Errorf("cloud: %w %q", ErrUnsupportedCredential, kind)
	}
}

// newCertificateCredential signs each token request with the certificate's
// private key. The file is read once, here: a certificate that is missing,
// unreadable or without its key stops Steward at startup, naming the file,
// rather than failing every collection later.
func newCertificateCredential(cfg Config, opts policy.ClientOptions, disableInstanceDiscovery bool) (azcore.TokenCredential, error) {
	if err := requireSettings("certificate", setting{"tenant id", cfg.TenantID}, setting{"client id", cfg.ClientID},
		setting{"certificate path", cfg.CertificatePath}); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(cfg.CertificatePath)
	if err != nil {
		return nil, fmt.Errorf("cloud: certificate credential: %w", err)
	}
	var password []byte
	if cfg.CertificatePassword != "" {
		password = []byte(cfg.CertificatePassword)
	}
	certs, key, err := azidentity.ParseCertificates(data, password)
	if err != nil {
		// The cause alone can be an ASN.1 message about PKCS#12 for what was
		// meant as PEM, so the error says what the file should be.
		return nil, fmt.Errorf("cloud: certificate credential: %s is not a certificate with its private key, "+
			"in PEM (unencrypted, so without a password) or PKCS#12: %w", cfg.CertificatePath, err)
	}
	// Each token request carries the certificate chain (x5c): Entra ID needs
	// it to authenticate by subject name and issuer, and the simulated
	// identity provider verifies an unregistered client's signature against
	// it. It costs a few hundred bytes per token request.
	cred, err := azidentity.NewClientCertificateCredential(cfg.TenantID, cfg.ClientID, certs, key,
		&azidentity.ClientCertificateCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: disableInstanceDiscovery,
			SendCertificateChain: true})
	if err != nil {
		return nil, fmt.Errorf("cloud: certificate credential: %s: %w", cfg.CertificatePath, err)
	}
	return cred, nil
}

// newWorkloadIdentityCredential exchanges the federated token in the token
// file for Entra ID tokens. The credential re-reads the file as the kubelet
// rotates it; it is read once here only so a wrong path or a volume that is
// not mounted stops Steward at startup, naming the file.
func newWorkloadIdentityCredential(cfg Config, opts policy.ClientOptions, disableInstanceDiscovery bool) (azcore.TokenCredential, error) {
	if err := requireSettings("workload identity", setting{"tenant id", cfg.TenantID}, setting{"client id", cfg.ClientID},
		setting{"token file path", cfg.TokenFilePath}); err != nil {
		return nil, err
	}
	token, err := os.ReadFile(cfg.TokenFilePath)
	if err != nil {
		return nil, fmt.Errorf("cloud: workload identity credential: %w", err)
	}
	if len(strings.TrimSpace(string(token))) == 0 {
		return nil, fmt.Errorf("cloud: workload identity credential: token file %s is empty", cfg.TokenFilePath)
	}
	// The tenant, client and file are always passed, so the credential never
	// falls back to the AZURE_* variables the webhook also sets: what
	// Steward's configuration says is what it uses.
	cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
		ClientOptions: opts, DisableInstanceDiscovery: disableInstanceDiscovery,
		TenantID: cfg.TenantID, ClientID: cfg.ClientID, TokenFilePath: cfg.TokenFilePath,
	})
	if err != nil {
		return nil, fmt.Errorf("cloud: workload identity credential: %w", err)
	}
	return cred, nil
}

// setting is a configuration value a credential kind needs, by the name
// the error reports it under.
type setting struct{ name, value string }

// requireSettings reports, in one error, every setting a credential kind
// needs and lacks, so one restart is enough to fix them all.
func requireSettings(kind string, settings ...setting) error {
	var missing []string
	for _, s := range settings {
		if s.value == "" {
			missing = append(missing, s.name)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("cloud: the %s credential needs the %s", kind, missing[0])
	default:
		return fmt.Errorf("cloud: the %s credential needs the %s and %s", kind,
			strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])
	}
}

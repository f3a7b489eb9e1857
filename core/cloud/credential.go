package cloud

import (
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// newCredential builds the configured credential on the shared client
// options, so token requests use the same transport, CA and retries as
// the calls they authorise. Instance discovery asks the public cloud
// whether an authority is genuine; for any other authority (the simulator,
// a private cloud) it must be off or the first token request fails.
func newCredential(cfg Config, opts policy.ClientOptions, disableInstanceDiscovery bool) (azcore.TokenCredential, error) {
	switch kind := cfg.Credential; kind {
	case "", CredentialClientSecret:
		if cfg.TenantID == "" || cfg.ClientID == "" || cfg.ClientSecret == "" {
			return nil, errors.New("cloud: a client secret credential needs the tenant id, client id and client secret")
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
	case CredentialCertificate, CredentialWorkloadIdentity:
		return nil, fmt.Errorf("cloud: %w %q: not implemented yet; use %q or %q",
			ErrUnsupportedCredential, kind, CredentialClientSecret, CredentialManagedIdentity)
	default:
		return nil, fmt.Errorf("cloud: %w %q", ErrUnsupportedCredential, kind)
	}
}

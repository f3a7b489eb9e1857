// Package cloud builds Steward's Azure clients from configuration and wraps
// the calls Steward makes in streaming functions that return typed records.
//
// Every client is a real Azure SDK for Go client. They share one cloud
// configuration (authority and Resource Manager endpoint), one HTTP
// transport and one retry policy, so pointing Steward at the simulated
// cloud only changes the endpoints and the trusted CA. The managing
// credential reads Steward's own directory and the tenants delegated to
// it through Azure Lighthouse; a tenant that is not delegated is read with
// the same application's credential in its own directory (Access). The
// wrappers call a function per record instead of returning slices: a
// tenant-year of daily costs is hundreds of thousands of rows and must not
// be held in memory at once.
package cloud

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/consumption/armconsumption"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/costmanagement/armcostmanagement/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/managedservices/armmanagedservices"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/policyinsights/armpolicyinsights"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armsubscriptions"
)

// The providers Config.Provider names.
const (
	// ProviderAzure is Microsoft Azure; endpoints default to the public
	// cloud's.
	ProviderAzure = "azure"
	// ProviderSim is the simulated cloud on loopback; its endpoints and CA
	// must be configured.
	ProviderSim = "sim"
)

// Azure public cloud endpoints, used for the endpoints a Config leaves
// empty when its provider is Azure.
const (
	PublicAuthority       = "https://login.microsoftonline.com/"
	PublicResourceManager = "https://management.azure.com"
	PublicGraph           = "https://graph.microsoft.com"
)

// ResourceManagerAudience is the audience of Resource Manager tokens in the
// public cloud. The simulated cloud issues and checks tokens for it too, so
// the credential requests the same scope from either.
const ResourceManagerAudience = "https://management.azure.com"

// CredentialKind is how Steward authenticates to the cloud.
type CredentialKind string

// The credential kinds: a client secret, the host's managed identity, a
// certificate whose key signs each token request, or workload identity, in
// which a token from another identity provider (on AKS, the pod's projected
// service-account token) stands in for the application's secret.
const (
	CredentialClientSecret     CredentialKind = "client_secret"
	CredentialManagedIdentity  CredentialKind = "managed_identity"
	CredentialCertificate      CredentialKind = "certificate"
	CredentialWorkloadIdentity CredentialKind = "workload_identity"
)

// ErrUnsupportedCredential is returned by New for a credential kind it
// cannot build.
var ErrUnsupportedCredential = errors.New("unsupported credential kind")

// Config says which cloud to talk to and how to authenticate.
type Config struct {
	// Provider is ProviderAzure or ProviderSim.
	Provider string
	// TenantID is the managing directory tenant Steward authenticates in.
	TenantID string
	// ClientID is the application (client) id; for a managed identity it
	// selects a user-assigned identity, and empty means the system-assigned
	// one.
	ClientID     string
	ClientSecret string
	// CertificatePath is the certificate credential's file, PEM or
	// PKCS#12, holding the certificate (with any chain) and its private
	// key.
	CertificatePath string
	// CertificatePassword decrypts a PKCS#12 CertificatePath; empty for an
	// unencrypted file.
	CertificatePassword string
	// TokenFilePath is the workload identity credential's federated token
	// file: on AKS, the projected service-account token the workload
	// identity webhook mounts and the kubelet keeps rotating.
	TokenFilePath string
	// Credential is the credential kind; empty means client_secret.
	Credential CredentialKind
	Endpoints  Endpoints
	// CAPEM is an extra trusted certificate authority in PEM, trusted in
	// addition to the system roots: the simulated cloud's.
	CAPEM []byte
	Retry Retry
}

// Endpoints are the base URLs of the cloud's services. Empty ones take the
// Azure public cloud's when the provider is Azure.
type Endpoints struct {
	// Authority is the identity provider's host, e.g.
	// https://login.microsoftonline.com/.
	Authority       string
	ResourceManager string
	Graph           string
	// DNS is the DNS server the mail-authentication lookups ask, as
	// host:port; empty means the system's resolvers, for either provider.
	DNS string
	// MTASTS is where the domains' MTA-STS policy hosts
	// (https://mta-sts.<domain>) are reached, as host:port, each still
	// named in TLS and verified by its certificate: the simulated cloud
	// answers for its world's. Empty means each host's own address.
	MTASTS string
	// ExchangeRates is a daily exchange rate service answering as the
	// Frankfurter API does (GET <url>/<start>..<end>?from=<code>): the
	// simulated cloud serves one; Azure has none, so empty there.
	ExchangeRates string
}

// Retry configures how throttled (429) and failed (500, 502, 503, 504)
// requests are retried, with exponential backoff and jitter. A Retry-After
// header from the service replaces the computed delay. Zero fields take
// the Azure SDK's defaults: 3 retries, 800ms initial delay, 60s cap.
type Retry struct {
	// MaxRetries is how many times a request is retried; negative means
	// never.
	MaxRetries int
	// Delay is the initial backoff, doubled on each further retry.
	Delay time.Duration
	// MaxDelay caps the backoff. It is also the longest Retry-After the
	// client waits for: a service asking for a longer pause ends the
	// retries, and the call fails with ErrThrottled instead of blocking.
	MaxDelay time.Duration
}

// retryStatusCodes are the statuses retried: throttling and the transient
// server errors. 408 is left out on purpose: Resource Manager answers it
// for requests that timed out server-side, which repeat the same way.
var retryStatusCodes = []int{
	http.StatusTooManyRequests,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// userAgent tags Steward's requests in the services' logs.
const userAgent = "steward"

// Clients are the Azure clients built from one Config. They are safe for
// concurrent use.
type Clients struct {
	// ResourceManager is the managing credential's: it reaches Steward's
	// own directory and, through Azure Lighthouse, the tenants delegated
	// to it. Access hands out the clients that read one customer tenant.
	*ResourceManager
	endpoints   Endpoints
	http        *http.Client
	policies    *PolicyClient
	assignments *armmanagedservices.RegistrationAssignmentsClient
	// creds holds the credential of each directory tenant Steward
	// authenticates in; the Graph clients and the direct tenants'
	// Resource Manager clients share them.
	creds *credentials
	// graph holds the per-tenant Graph clients; see Graph.
	graph *graphClients

	mu sync.Mutex
	// directories are the Resource Manager clients of the directories
	// read with their own credential, by lower-cased tenant id.
	directories map[string]*ResourceManager
}

// ResourceManager is the Azure Resource Manager clients of one credential:
// the managing directory's, or a customer directory's that Steward reads
// directly. Its methods wrap the calls Steward makes. It is safe for
// concurrent use.
type ResourceManager struct {
	cred    azcore.TokenCredential
	armOpts *arm.ClientOptions

	subscriptions *armsubscriptions.Client
	query         *armcostmanagement.QueryClient
	reservations  *armconsumption.ReservationsSummariesClient
	// details, transactions and recommendations read commitments.
	details         *armconsumption.ReservationsDetailsClient
	transactions    *armconsumption.ReservationTransactionsClient
	recommendations *armconsumption.ReservationRecommendationsClient
	// benefitUsage and benefitRecommendations read savings plans'
	// utilisation and the advice to buy them.
	benefitUsage           *armcostmanagement.BenefitUtilizationSummariesClient
	benefitRecommendations *armcostmanagement.BenefitRecommendationsClient
	policyStates           *armpolicyinsights.PolicyStatesClient
	resourceGraph          *armresourcegraph.Client
	budgets                *armconsumption.BudgetsClient
	// raw sends requests the SDK has no method for, through the same
	// pipeline (credential, retry, transport) as the typed clients.
	raw *arm.Client
	// usages holds the usage clients, which the SDK binds to one
	// subscription, by provider and subscription; see Usages.
	usages sync.Map
}

// New builds the clients: one cloud configuration, one HTTP transport, one
// credential and one set of client options shared by every client.
func New(cfg Config) (*Clients, error) {
	ep, err := resolveEndpoints(cfg)
	if err != nil {
		return nil, err
	}
	transport, err := newTransport(cfg.CAPEM)
	if err != nil {
		return nil, err
	}
	audience := ResourceManagerAudience
	if cfg.Provider == ProviderAzure && ep.ResourceManager != PublicResourceManager {
		// A sovereign cloud's Resource Manager accepts tokens for its own
		// URL; the public cloud's URL would name the wrong audience there.
		audience = ep.ResourceManager
	}
	cloudCfg := azcloud.Configuration{
		ActiveDirectoryAuthorityHost: ep.Authority,
		Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
			azcloud.ResourceManager: {Endpoint: ep.ResourceManager, Audience: audience},
		},
	}
	base := policy.ClientOptions{
		Cloud:     cloudCfg,
		Transport: transport,
		Retry: policy.RetryOptions{
			MaxRetries:    int32(cfg.Retry.MaxRetries),
			RetryDelay:    cfg.Retry.Delay,
			MaxRetryDelay: cfg.Retry.MaxDelay,
			StatusCodes:   retryStatusCodes,
		},
		Telemetry: policy.TelemetryOptions{ApplicationID: userAgent},
	}
	creds, err := newCredentials(cfg, base, ep.Authority != PublicAuthority)
	if err != nil {
		return nil, err
	}
	// Steward only reads; automatic resource provider registration would
	// need write access and must not happen behind an operator's back.
	armOpts := &arm.ClientOptions{ClientOptions: base, DisableRPRegistration: true}
	managing, err := newResourceManager(creds.managing, armOpts)
	if err != nil {
		return nil, err
	}
	policies, err := NewPolicyClient(ep.MTASTS, cfg.CAPEM)
	if err != nil {
		return nil, err
	}
	c := &Clients{ResourceManager: managing, endpoints: ep, http: transport, policies: policies, creds: creds, directories: map[string]*ResourceManager{}}
	c.graph = newGraphClients(cfg, base, ep, creds)
	if c.assignments, err = armmanagedservices.NewRegistrationAssignmentsClient(creds.managing, armOpts); err != nil {
		return nil, err
	}
	return c, nil
}

// newResourceManager builds the Resource Manager clients of a credential
// on the shared client options.
func newResourceManager(cred azcore.TokenCredential, armOpts *arm.ClientOptions) (*ResourceManager, error) {
	rm := &ResourceManager{cred: cred, armOpts: armOpts}
	var err error
	if rm.subscriptions, err = armsubscriptions.NewClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.query, err = armcostmanagement.NewQueryClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.reservations, err = armconsumption.NewReservationsSummariesClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.details, err = armconsumption.NewReservationsDetailsClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.transactions, err = armconsumption.NewReservationTransactionsClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.recommendations, err = armconsumption.NewReservationRecommendationsClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.benefitUsage, err = armcostmanagement.NewBenefitUtilizationSummariesClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.benefitRecommendations, err = armcostmanagement.NewBenefitRecommendationsClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.policyStates, err = armpolicyinsights.NewPolicyStatesClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.resourceGraph, err = armresourcegraph.NewClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.budgets, err = armconsumption.NewBudgetsClient(cred, armOpts); err != nil {
		return nil, err
	}
	if rm.raw, err = arm.NewClient("steward-cloud", "v1.0.0", cred, armOpts); err != nil {
		return nil, err
	}
	return rm, nil
}

// directory is the Resource Manager clients of a directory tenant's own
// credential, built on first use and kept, so its credential caches its
// tokens across calls; the managing directory's are the managing
// clients.
func (c *Clients) directory(tenantID string) (*ResourceManager, error) {
	if strings.EqualFold(tenantID, c.creds.managingTenant) {
		return c.ResourceManager, nil
	}
	key := strings.ToLower(tenantID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rm, ok := c.directories[key]; ok {
		return rm, nil
	}
	cred, err := c.creds.in(tenantID)
	if err != nil {
		return nil, err
	}
	rm, err := newResourceManager(cred, c.ResourceManager.armOpts)
	if err != nil {
		return nil, err
	}
	c.directories[key] = rm
	return rm, nil
}

// Endpoints are the endpoints the clients use, defaults filled in.
func (c *Clients) Endpoints() Endpoints { return c.endpoints }

// HTTPClient is the clients' shared HTTP client, which trusts the
// configured CA besides the system roots: for plain HTTPS services beside
// the cloud's, such as Endpoints.ExchangeRates.
func (c *Clients) HTTPClient() *http.Client { return c.http }

func resolveEndpoints(cfg Config) (Endpoints, error) {
	ep := cfg.Endpoints
	switch cfg.Provider {
	case ProviderAzure:
		ep.Authority = orDefault(ep.Authority, PublicAuthority)
		ep.ResourceManager = orDefault(ep.ResourceManager, PublicResourceManager)
		ep.Graph = orDefault(ep.Graph, PublicGraph)
	case ProviderSim:
		if ep.Authority == "" || ep.ResourceManager == "" {
			return ep, errors.New("cloud: the simulated cloud needs its authority and resource manager endpoints")
		}
	default:
		return ep, fmt.Errorf("cloud: provider must be %q or %q, not %q", ProviderAzure, ProviderSim, cfg.Provider)
	}
	for _, u := range []*string{&ep.Authority, &ep.ResourceManager, &ep.Graph, &ep.ExchangeRates} {
		if *u != "" && !strings.HasPrefix(*u, "https://") {
			return ep, fmt.Errorf("cloud: endpoint %q must be https", *u)
		}
	}
	// MSAL joins the tenant to the authority host and wants the slash.
	if !strings.HasSuffix(ep.Authority, "/") {
		ep.Authority += "/"
	}
	ep.ResourceManager = strings.TrimSuffix(ep.ResourceManager, "/")
	ep.Graph = strings.TrimSuffix(ep.Graph, "/")
	ep.ExchangeRates = strings.TrimSuffix(ep.ExchangeRates, "/")
	return ep, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

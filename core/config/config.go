// Package config reads Steward's settings from the environment (CONTRACT
// section 1) and refuses combinations that are unsafe outside development.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Environments.
const (
	Development = "development"
	Staging     = "staging"
	Production  = "production"
)

// Config is every setting of the host.
type Config struct {
	Env         string
	HTTPAddr    string
	DataDir     string
	DatabaseURL string
	RedisURL    string
	// RedisPrefix namespaces every key Steward writes to Redis, so that
	// several deployments can share one Redis.
	RedisPrefix string
	PluginsFile string
	// Cloud is "sim" (the simulated cloud on loopback) or "azure".
	Cloud    string
	SimWorld string
	// SimBootstrap registers the world's tenants and queues a first sync
	// of every domain at start-up (development with the simulator only).
	SimBootstrap bool
	// Azure holds the credentials used when Cloud is "azure".
	Azure AzureConfig
	// OIDC is the identity provider users sign in with.
	OIDC OIDCConfig
	// JWTSecret is empty in development when none is set: the host then
	// generates one and keeps it in DataDir.
	JWTSecret string
	// JWTPreviousSecrets still verify tokens signed before a key rotation
	// (STEWARD_JWT_PREVIOUS_SECRETS, comma-separated) until they expire.
	JWTPreviousSecrets     []string
	DevUsername            string
	DevPassword            string
	RateLimitPerMinute     int
	AuthRateLimitPerMinute int
	// CostlyRateLimitPerMinute is the budget of routes that do expensive
	// work on demand (sdk.RateCostly), drawn on as well as the default one.
	CostlyRateLimitPerMinute int
	// UIRateLimitPerMinute is the budget of a browser's pages, fragments
	// and assets, apart from the default one.
	UIRateLimitPerMinute int
	AccessTokenTTL       time.Duration
	RefreshTokenTTL      time.Duration
	// AuditRetention is how long audit entries are kept; 0 keeps them forever.
	AuditRetention time.Duration
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int
	// AccessLog logs every request; errors are logged regardless.
	AccessLog bool
	// LogLevel is the hclog level name.
	LogLevel string
	// TLSCertFile and TLSKeyFile, both or neither, make the host serve
	// HTTPS itself (TLS 1.3 only); the files are re-read when they change,
	// so a renewed certificate needs no restart.
	TLSCertFile string
	TLSKeyFile  string
	// DebugAddr, when set, serves Go's runtime profiles (net/http/pprof)
	// on a listener of its own, which must be on a loopback address.
	DebugAddr string
	// DrainDelay is how long a stopping host keeps serving after its
	// readiness turned 503, so that load balancers stop sending it new
	// requests before it stops accepting them. Defaults to 5s outside
	// development and 0 in development.
	DrainDelay time.Duration
	// SyncTenantTimeout bounds one tenant's part of a sync run; a part
	// whose replica died is run again a little after it.
	SyncTenantTimeout time.Duration
	// ShutdownGrace bounds how long a stopping host waits for in-flight
	// requests and streams after it stopped accepting new ones.
	ShutdownGrace time.Duration
	// Notify is how the host delivers notifications.
	Notify NotifyConfig
}

// NotifyConfig is how the delivery worker works through the outbox of
// notifications.
type NotifyConfig struct {
	// PollInterval is how often each replica looks for due deliveries
	// (it also looks at once when an event is raised on it).
	PollInterval time.Duration
	// RetryMin and RetryMax bound the backoff between a failed attempt
	// and the next, doubling from RetryMin up to RetryMax, with jitter.
	RetryMin time.Duration
	RetryMax time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is dead.
	MaxAttempts int
	// Timeout bounds one attempt: an HTTP request or an SMTP session.
	Timeout time.Duration
	// AllowPrivateNetworks lets channels reach loopback, private and
	// link-local addresses, which are refused by default outside
	// development so that a channel cannot probe the host's own network.
	AllowPrivateNetworks bool
	// CAFile is a PEM bundle of certificate authorities trusted, besides
	// the system's, by SMTP servers and webhooks: a relay on an internal
	// network with a private CA.
	CAFile string
}

// AzureConfig is how Steward signs in to Azure: an application in the
// managing tenant that Lighthouse delegations grant access to.
type AzureConfig struct {
	TenantID     string
	ClientID     string
	ClientSecret string
	// Credential is client_secret (default), certificate,
	// managed_identity or workload_identity.
	Credential string
	// CertificatePath and CertificatePassword are the certificate
	// credential's PEM or PKCS#12 file.
	CertificatePath     string
	CertificatePassword string
	// TokenFile is the workload identity's projected token.
	TokenFile string
}

// OIDCConfig is Steward's registration as an OpenID Connect client. With
// the simulated cloud and no Issuer, the host signs in against the
// simulated identity provider.
type OIDCConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is where the identity provider sends the browser back;
	// empty means the host's own /login page.
	RedirectURL string
	// AdminTenants are the managing directories: only their users' app
	// role Governance.Admin makes a Steward admin, as any directory can
	// grant its own users that role. Empty here means the host's default:
	// the directory of STEWARD_AZURE_TENANT_ID, or the simulated world's
	// first tenant.
	AdminTenants []string
	// RegisteredOnly lets only users of the managing directories and of
	// the directories of active registered tenants sign in.
	RegisteredOnly bool
}

// Load reads the configuration through getenv (os.Getenv in production,
// a map in tests).
func Load(getenv func(string) string) (Config, error) {
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Env:                get("STEWARD_ENV", Development),
		HTTPAddr:           get("STEWARD_HTTP_ADDR", "127.0.0.1:8000"),
		DataDir:            get("STEWARD_DATA_DIR", "./data"),
		RedisURL:           get("STEWARD_REDIS_URL", ""),
		RedisPrefix:        get("STEWARD_REDIS_PREFIX", "steward"),
		PluginsFile:        get("STEWARD_PLUGINS_FILE", "./plugins.hcl"),
		SimWorld:           get("STEWARD_SIM_WORLD", ""),
		SimBootstrap:       get("STEWARD_SIM_BOOTSTRAP", "true") != "false",
		JWTSecret:          getenv("STEWARD_JWT_SECRET"),
		JWTPreviousSecrets: splitList(getenv("STEWARD_JWT_PREVIOUS_SECRETS")),
		Azure: AzureConfig{
			TenantID:            get("STEWARD_AZURE_TENANT_ID", ""),
			ClientID:            get("STEWARD_AZURE_CLIENT_ID", ""),
			ClientSecret:        getenv("STEWARD_AZURE_CLIENT_SECRET"),
			Credential:          get("STEWARD_AZURE_CREDENTIAL", "client_secret"),
			CertificatePath:     get("STEWARD_AZURE_CERTIFICATE_PATH", ""),
			CertificatePassword: getenv("STEWARD_AZURE_CERTIFICATE_PASSWORD"),
			TokenFile:           get("STEWARD_AZURE_TOKEN_FILE", getenv("AZURE_FEDERATED_TOKEN_FILE")),
		},
		OIDC: OIDCConfig{
			Issuer:       get("STEWARD_OIDC_ISSUER", ""),
			ClientID:     get("STEWARD_OIDC_CLIENT_ID", ""),
			ClientSecret: getenv("STEWARD_OIDC_CLIENT_SECRET"),
			RedirectURL:  get("STEWARD_OIDC_REDIRECT_URL", ""),
			AdminTenants: splitList(getenv("STEWARD_OIDC_ADMIN_TENANTS")),
		},
		DevUsername: get("STEWARD_DEV_USERNAME", "admin@steward.local"),
		DevPassword: get("STEWARD_DEV_PASSWORD", "steward-dev"),
		AccessLog:   get("STEWARD_ACCESS_LOG", "true") != "false",
		LogLevel:    get("STEWARD_LOG_LEVEL", "info"),
		TLSCertFile: get("STEWARD_TLS_CERT_FILE", ""),
		TLSKeyFile:  get("STEWARD_TLS_KEY_FILE", ""),
		DebugAddr:   get("STEWARD_DEBUG_ADDR", ""),
		Notify:      NotifyConfig{CAFile: get("STEWARD_NOTIFY_CA_FILE", "")},
	}
	switch c.Env {
	case Development, Staging, Production:
	default:
		return c, fmt.Errorf("STEWARD_ENV must be development, staging or production, not %q", c.Env)
	}
	c.DatabaseURL = get("STEWARD_DATABASE_URL", "sqlite://"+filepath.Join(c.DataDir, "steward.db"))
	if err := checkRedisURL(c.RedisURL); err != nil {
		return c, err
	}
	defCloud := "azure"
	if c.Env == Development {
		defCloud = "sim"
	}
	c.Cloud = get("STEWARD_CLOUD", defCloud)
	if c.Cloud != "sim" && c.Cloud != "azure" {
		return c, fmt.Errorf("STEWARD_CLOUD must be sim or azure, not %q", c.Cloud)
	}
	switch v := get("STEWARD_OIDC_REGISTERED_ONLY", "false"); v {
	case "true", "false":
		c.OIDC.RegisteredOnly = v == "true"
	default:
		return c, fmt.Errorf("STEWARD_OIDC_REGISTERED_ONLY must be true or false, not %q", v)
	}
	if c.OIDC.Issuer != "" && c.OIDC.ClientID == "" {
		return c, errors.New("STEWARD_OIDC_CLIENT_ID must be set with STEWARD_OIDC_ISSUER")
	}
	// Behind a proxy the listen address is not what browsers reach, so
	// only development may derive the redirect URL from it.
	if c.OIDC.Issuer != "" && c.OIDC.RedirectURL == "" && c.Env != Development {
		return c, errors.New("STEWARD_OIDC_REDIRECT_URL must be set with STEWARD_OIDC_ISSUER outside development")
	}
	var err error
	ints := []struct {
		key  string
		def  int
		dst  *int
		min_ int
	}{
		{"STEWARD_RATE_LIMIT_PER_MINUTE", 100, &c.RateLimitPerMinute, 1},
		{"STEWARD_AUTH_RATE_LIMIT_PER_MINUTE", 10, &c.AuthRateLimitPerMinute, 1},
		{"STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE", 10, &c.CostlyRateLimitPerMinute, 1},
		{"STEWARD_UI_RATE_LIMIT_PER_MINUTE", 600, &c.UIRateLimitPerMinute, 1},
		{"STEWARD_MAX_BODY_BYTES", 8 << 20, &c.MaxBodyBytes, 1024},
		{"STEWARD_NOTIFY_MAX_ATTEMPTS", 10, &c.Notify.MaxAttempts, 1},
	}
	for _, it := range ints {
		v := get(it.key, strconv.Itoa(it.def))
		n, convErr := strconv.Atoi(v)
		if convErr != nil || n < it.min_ {
			return c, fmt.Errorf("%s must be an integer of at least %d, not %q", it.key, it.min_, v)
		}
		*it.dst = n
	}
	durs := []struct {
		key string
		def string
		dst *time.Duration
	}{
		{"STEWARD_ACCESS_TOKEN_TTL", "15m", &c.AccessTokenTTL},
		{"STEWARD_REFRESH_TOKEN_TTL", "168h", &c.RefreshTokenTTL},
		{"STEWARD_AUDIT_RETENTION", "0s", &c.AuditRetention},
		{"STEWARD_DRAIN_DELAY", defaultDrainDelay(c.Env), &c.DrainDelay},
		{"STEWARD_SHUTDOWN_GRACE", "30s", &c.ShutdownGrace},
		{"STEWARD_SYNC_TENANT_TIMEOUT", "30m", &c.SyncTenantTimeout},
	}
	for _, d := range durs {
		v := get(d.key, d.def)
		if *d.dst, err = time.ParseDuration(v); err != nil || *d.dst < 0 {
			return c, fmt.Errorf("%s must be a duration such as 15m, not %q", d.key, v)
		}
	}
	if err := c.Notify.load(get, c.Env); err != nil {
		return c, err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return c, errors.New("STEWARD_TLS_CERT_FILE and STEWARD_TLS_KEY_FILE must be set together")
	}
	if err := checkDebugAddr(c.DebugAddr); err != nil {
		return c, err
	}
	return c, c.checkSafe()
}

// load reads the delivery worker's durations and private network switch,
// each of which must be positive, with RetryMin at most RetryMax.
func (n *NotifyConfig) load(get func(k, def string) string, env string) error {
	durs := []struct {
		key string
		def string
		dst *time.Duration
	}{
		{"STEWARD_NOTIFY_POLL_INTERVAL", "5s", &n.PollInterval},
		{"STEWARD_NOTIFY_RETRY_MIN", "30s", &n.RetryMin},
		{"STEWARD_NOTIFY_RETRY_MAX", "1h", &n.RetryMax},
		{"STEWARD_NOTIFY_TIMEOUT", "10s", &n.Timeout},
	}
	for _, d := range durs {
		v := get(d.key, d.def)
		var err error
		if *d.dst, err = time.ParseDuration(v); err != nil || *d.dst <= 0 {
			return fmt.Errorf("%s must be a positive duration such as %s, not %q", d.key, d.def, v)
		}
	}
	if n.RetryMin > n.RetryMax {
		return fmt.Errorf("STEWARD_NOTIFY_RETRY_MIN (%s) must not exceed STEWARD_NOTIFY_RETRY_MAX (%s)", n.RetryMin, n.RetryMax)
	}
	def := "false"
	if env == Development {
		def = "true"
	}
	switch v := get("STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS", def); v {
	case "true", "false":
		n.AllowPrivateNetworks = v == "true"
	default:
		return fmt.Errorf("STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS must be true or false, not %q", v)
	}
	return nil
}

// defaultDrainDelay gives load balancers time to see a stopping replica's
// readiness fail, except on a developer's machine, where nothing routes to
// the host and Ctrl-C should stop it at once.
func defaultDrainDelay(env string) string {
	if env == Development {
		return "0s"
	}
	return "5s"
}

// checkDebugAddr accepts an empty address or one on a loopback
// interface: the profiles it serves are unauthenticated and reveal the
// process's internals, so they are reached from the machine itself (or
// through kubectl port-forward, which connects to the pod's loopback).
func checkDebugAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("STEWARD_DEBUG_ADDR must be host:port, such as 127.0.0.1:6060, not %q", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("STEWARD_DEBUG_ADDR must be on a loopback address (127.0.0.1, ::1 or localhost), not %q: its profiles are unauthenticated", addr)
	}
	return nil
}

// TLS reports whether the host serves HTTPS itself.
func (c Config) TLS() bool { return c.TLSCertFile != "" }

// checkRedisURL refuses a Redis URL the client could not use, without
// repeating it: it may hold a password, and url.Parse's own error quotes
// the whole URL.
func checkRedisURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("STEWARD_REDIS_URL must be a URL such as redis://:password@host:6379/0 (the value is not shown: it may hold a password)")
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
		return nil
	}
	return fmt.Errorf("STEWARD_REDIS_URL must start with redis://, rediss:// or unix://, not %s", u.Redacted())
}

func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// DevLoginEnabled reports whether the development credential pair works.
func (c Config) DevLoginEnabled() bool { return c.Env == Development }

// checkSafe refuses to run staging or production with development shortcuts;
// each error is one line that says what to change.
func (c Config) checkSafe() error {
	if c.Env == Development {
		return nil
	}
	switch {
	case c.JWTSecret == "":
		return errors.New("refusing to start: STEWARD_JWT_SECRET must be set outside development (the generated development secret is not allowed)")
	case len(c.JWTSecret) < 32:
		return errors.New("refusing to start: STEWARD_JWT_SECRET must be at least 32 bytes")
	case c.Cloud == "sim":
		return errors.New("refusing to start: the simulated cloud (STEWARD_CLOUD=sim) is for development only")
	}
	return nil
}

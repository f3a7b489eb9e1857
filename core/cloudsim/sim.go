// Package cloudsim is the simulated cloud: real HTTPS servers on loopback
// that answer the identity provider's, Azure Resource Manager's and
// Microsoft Graph's requests in their wire formats, from a world (package
// world). Steward's cloud clients talk to it exactly as to Azure; only the
// endpoints and the trusted CA differ. Tests inject faults per route.
package cloudsim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Service names a simulated endpoint.
type Service string

// The simulated services.
const (
	IdP   Service = "idp"
	ARM   Service = "arm"
	Graph Service = "graph"
)

// Options configure Start.
type Options struct {
	// Addrs pins a service's listen address; unset services take a free
	// loopback port, so several simulators can run side by side.
	Addrs  map[Service]string
	Logger hclog.Logger
	// Now is the simulator's clock; the world's "today" follows it.
	Now func() time.Time
}

// Sim is a running simulated cloud.
type Sim struct {
	Faults *Faults
	// URLs are the base URLs of the services, e.g. https://127.0.0.1:41234.
	URLs map[Service]string
	// CAPEM is the certificate authority that signed the servers'
	// certificate; clients trust it instead of the system roots.
	CAPEM []byte

	ca      *authority
	world   atomic.Pointer[world.World]
	logger  hclog.Logger
	now     func() time.Time
	mu      sync.Mutex
	servers []*http.Server
	muxes   map[Service]*http.ServeMux

	consentMu sync.Mutex
	// consent is the admin consent given or withdrawn at run time, by
	// lower-cased directory tenant id; see SetConsent.
	consent map[string]bool
}

// Start serves the world on loopback.
func Start(ctx context.Context, w *world.World, o Options) (*Sim, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ca, err := newAuthority()
	if err != nil {
		return nil, fmt.Errorf("simulator certificate: %w", err)
	}
	cert, err := ca.issue([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	if err != nil {
		return nil, fmt.Errorf("simulator certificate: %w", err)
	}
	s := &Sim{Faults: newFaults(), URLs: map[Service]string{}, CAPEM: ca.pem, ca: ca, logger: o.Logger, now: o.Now,
		muxes: map[Service]*http.ServeMux{}, consent: map[string]bool{}}
	s.world.Store(w)
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	for _, svc := range []Service{IdP, ARM, Graph} {
		addr := o.Addrs[svc]
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("simulator %s: %w", svc, err)
		}
		mux := http.NewServeMux()
		s.muxes[svc] = mux
		s.URLs[svc] = "https://" + ln.Addr().String()
		srv := &http.Server{
			Handler:           s.Faults.middleware(svc, s.logged(svc, mux)),
			TLSConfig:         tlsCfg.Clone(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		}
		s.servers = append(s.servers, srv)
		go func() {
			if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				o.Logger.Error("simulator server stopped", "service", svc, "error", err)
			}
		}()
		mux.HandleFunc("POST /_sim/faults", s.Faults.handleSet(svc))
		mux.HandleFunc("DELETE /_sim/faults", s.Faults.handleClear)
	}
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	return s, nil
}

// World is the world the simulator serves now.
func (s *Sim) World() *world.World { return s.world.Load() }

// SetWorld replaces the world, as the demo world does each day so that new
// cost rows appear; requests in flight keep the world they started with.
func (s *Sim) SetWorld(w *world.World) { s.world.Store(w) }

// SetConsent records that a directory's administrator granted (or
// withdrew) admin consent to Steward's application, as the identity
// provider's admin consent endpoint does. It outlives SetWorld, so the
// demo world regenerated each day keeps the consents given.
func (s *Sim) SetConsent(directoryTenantID string, granted bool) {
	s.consentMu.Lock()
	defer s.consentMu.Unlock()
	s.consent[strings.ToLower(directoryTenantID)] = granted
}

// Consents reports whether a directory tenant of the world has consented
// to Steward's application: as last set by SetConsent, or else as the
// world says (world.Tenant.Consented). A directory the world does not hold
// has not.
func (s *Sim) Consents(directoryTenantID string) bool {
	w := s.World()
	if !w.Has(directoryTenantID) {
		return false
	}
	s.consentMu.Lock()
	granted, ok := s.consent[strings.ToLower(directoryTenantID)]
	s.consentMu.Unlock()
	if ok {
		return granted
	}
	return w.Consents(directoryTenantID)
}

// Handle registers a route on a service; the service packages call it.
func (s *Sim) Handle(svc Service, pattern string, h http.HandlerFunc) {
	s.muxes[svc].HandleFunc(pattern, h)
}

// Now is the simulator's current time.
func (s *Sim) Now() time.Time { return s.now() }

// Logger is the simulator's logger.
func (s *Sim) Logger() hclog.Logger { return s.logger }

// CertPool trusts the simulator's CA.
func (s *Sim) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CAPEM)
	return pool
}

// HTTPClient is a client that trusts the simulator, for tests.
func (s *Sim) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12}}, Timeout: 30 * time.Second}
}

// Close stops every server.
func (s *Sim) Close() {
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()
	for _, srv := range servers {
		_ = srv.Close()
	}
}

func (s *Sim) logged(svc Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.logger.Debug("request", "service", svc, "method", r.Method, "path", r.URL.Path)
		next.ServeHTTP(w, r)
	})
}

// authority is the simulator's certificate authority, which signs its
// servers' certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newAuthority makes a certificate authority valid for a year.
func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Steward simulated cloud CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue makes a server certificate for the host names and addresses,
// signed by the authority.
func (a *authority) issue(names []string, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: names, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Certificate is a server certificate for the host names, signed by the
// simulator's CA: for simulated servers that answer as hosts of the
// world's domains, such as their MTA-STS policy hosts.
func (s *Sim) Certificate(names ...string) (tls.Certificate, error) {
	if len(names) == 0 {
		return tls.Certificate{}, errors.New("simulator certificate: no host name")
	}
	return s.ca.issue(names, nil)
}

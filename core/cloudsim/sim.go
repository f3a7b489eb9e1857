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
	caPEM, cert, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("simulator certificate: %w", err)
	}
	s := &Sim{Faults: newFaults(), URLs: map[Service]string{}, CAPEM: caPEM, logger: o.Logger, now: o.Now,
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

// selfSigned makes a CA and a loopback server certificate signed by it.
func selfSigned() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Steward simulated cloud CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return nil, cert, err
	}
	cert, err = tls.X509KeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, cert, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}

// Package mtasts serves the world's MTA-STS policies (RFC 8461) as their
// policy hosts do: over HTTPS at
// https://mta-sts.<domain>/.well-known/mta-sts.txt, one server on
// loopback answering for every domain of the world, told apart by the
// TLS server name and the Host header. Each host's certificate names it
// and is signed by the simulator's CA, so clients verify it as they
// would a real one; they only need to dial this server instead of the
// host's own address. A domain without a policy in the world answers
// 404; a server name outside the world's domains gets no certificate.
package mtasts

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Service is the server's key in cloudsim.Options.Addrs.
const Service cloudsim.Service = "mta-sts"

// Path is where a policy host serves its policy (RFC 8461, 3.2).
const Path = "/.well-known/mta-sts.txt"

// hostPrefix is the label a domain's policy host has before it.
const hostPrefix = "mta-sts."

// Server is a running policy server.
type Server struct {
	addr string
	srv  *http.Server

	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

// Start serves the policies of s's world on addr, or on a free loopback
// port when addr is empty. The policies are read from the world at each
// request, so SetWorld changes them.
func Start(ctx context.Context, s *cloudsim.Sim, addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simulated mta-sts: %w", err)
	}
	p := &Server{addr: ln.Addr().String(), certs: map[string]*tls.Certificate{}}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(w, r, s.World()) }),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return p.certificate(s, h.ServerName) }},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := p.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger().Error("simulated mta-sts stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		p.Close()
	}()
	return p, nil
}

// Addr is the host:port the server answers on, for every policy host.
func (p *Server) Addr() string { return p.addr }

// Close stops the server.
func (p *Server) Close() { _ = p.srv.Close() }

// certificate is the policy host's certificate, issued on first use, for
// a server name that is mta-sts.<a tenant domain of the world>.
func (p *Server) certificate(s *cloudsim.Sim, serverName string) (*tls.Certificate, error) {
	host := strings.ToLower(serverName)
	domain, ok := strings.CutPrefix(host, hostPrefix)
	if !ok || !hasDomain(s.World(), domain) {
		return nil, fmt.Errorf("simulated mta-sts: no policy host %q", serverName)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.certs[host]; c != nil {
		return c, nil
	}
	c, err := s.Certificate(host)
	if err != nil {
		return nil, err
	}
	p.certs[host] = &c
	return &c, nil
}

func hasDomain(w *world.World, domain string) bool {
	for _, t := range w.Tenants {
		for _, d := range t.Domains {
			if strings.EqualFold(strings.TrimSuffix(d, "."), domain) {
				return true
			}
		}
	}
	return false
}

// serve answers a policy request for the domain the Host header names.
func serve(w http.ResponseWriter, r *http.Request, wd *world.World) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	domain, ok := strings.CutPrefix(strings.ToLower(host), hostPrefix)
	if !ok || r.URL.Path != Path || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	for _, m := range wd.MTASTS {
		if !strings.EqualFold(strings.TrimSuffix(m.Domain, "."), domain) {
			continue
		}
		w.Header().Set("Content-Type", cmp.Or(m.ContentType, "text/plain"))
		w.WriteHeader(cmp.Or(m.Status, http.StatusOK))
		_, _ = w.Write([]byte(m.Policy))
		return
	}
	http.NotFound(w, r)
}

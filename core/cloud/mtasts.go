package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"time"
)

// MTA-STS policy fetch bounds.
const (
	// maxPolicyBytes bounds a policy file: real ones are a few hundred
	// bytes, and RFC 8461 (3.3) lets senders cap what they read.
	maxPolicyBytes = 64 << 10
	// policyTimeout bounds one fetch, as RFC 8461 (3.3) advises senders
	// to bound theirs.
	policyTimeout = 60 * time.Second
)

// ErrPolicy is a policy host's answer that is no policy: a status other
// than 200, a redirect, a media type other than text/plain or a file too
// large. Failures to connect or to verify the host's certificate are
// errors of their own kind.
var ErrPolicy = errors.New("no MTA-STS policy")

// PolicyClient fetches domains' MTA-STS policy files (RFC 8461, 3.3) over
// HTTPS, verifying each policy host's certificate against its name. It
// is safe for concurrent use.
type PolicyClient struct {
	http *http.Client
}

// NewPolicyClient returns a client that trusts the system roots plus
// caPEM when set. With via set (host:port), every policy host is reached
// at that address instead of its own, the host still named in TLS and
// verified by its certificate: the simulated cloud answers for the
// world's policy hosts so. Empty, each host is dialled at port 443.
func NewPolicyClient(via string, caPEM []byte) (*PolicyClient, error) {
	tlsCfg, err := tlsConfig(caPEM)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: tlsTimeout,
		IdleConnTimeout:     idleConnTimeout,
		MaxIdleConnsPerHost: 2,
	}
	if via != "" {
		transport.Proxy = nil
		transport.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, via)
		}
	}
	return &PolicyClient{http: &http.Client{
		Transport: transport,
		Timeout:   policyTimeout,
		// A policy host's redirect is no policy (RFC 8461, 3.3).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// MTASTSPolicy fetches domain's policy file from
// https://mta-sts.<domain>/.well-known/mta-sts.txt and returns its text.
// An answer that is no policy is an error matching ErrPolicy.
func (c *PolicyClient) MTASTSPolicy(ctx context.Context, domain string) (string, error) {
	url := "https://mta-sts." + domain + "/.well-known/mta-sts.txt"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("cloud: mta-sts %s: %w", domain, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("cloud: mta-sts %s: %w", domain, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("cloud: mta-sts %s: HTTP %d: %w", url, resp.StatusCode, ErrPolicy)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return "", fmt.Errorf("cloud: mta-sts %s: media type %q, not text/plain: %w", url, resp.Header.Get("Content-Type"), ErrPolicy)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPolicyBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("cloud: mta-sts %s: %w", url, err)
	case len(body) > maxPolicyBytes:
		return "", fmt.Errorf("cloud: mta-sts %s: larger than %d bytes: %w", url, maxPolicyBytes, ErrPolicy)
	}
	return string(body), nil
}

// MTASTS is the client of the domains' MTA-STS policy hosts, reaching
// them through Endpoints.MTASTS when set.
func (c *Clients) MTASTS() *PolicyClient { return c.policies }

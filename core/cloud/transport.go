package cloud

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"
)

// Transport timeouts. There is no overall request timeout: callers bound
// calls with their context, and a long listing is many requests.
const (
	dialTimeout = 30 * time.Second
	tlsTimeout  = 10 * time.Second
	// responseHeaderTimeout bounds one try's wait for the service to
	// answer. Cost Management queries over a year take tens of seconds;
	// a try stuck longer than this is abandoned and retried.
	responseHeaderTimeout = 2 * time.Minute
	idleConnTimeout       = 90 * time.Second
)

// newTransport is the one HTTP client every Azure client and the
// credential share, so connections are pooled across them. It trusts the
// system roots plus caPEM when set, and speaks TLS 1.2 or later.
func newTransport(caPEM []byte) (*http.Client, error) {
	tlsCfg, err := tlsConfig(caPEM)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   tlsTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		IdleConnTimeout:       idleConnTimeout,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		ExpectContinueTimeout: time.Second,
	}}, nil
}

// tlsConfig speaks TLS 1.2 or later and trusts the system roots plus
// caPEM when set.
func tlsConfig(caPEM []byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("cloud: the extra CA is not a PEM certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

package server

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certCheckEvery bounds how often a handshake looks at the certificate
// files: a renewal is served within this long of landing on disk.
const certCheckEvery = 5 * time.Second

// TLSConfig is the host's HTTPS configuration: TLS 1.3 only (the spec's
// transport rule), with the key pair read from certFile and keyFile, and
// read again when either file changes, so that a renewed certificate (a
// cert-manager Secret, a certbot hook) is served without a restart. A pair
// that fails to load at start is an error; a renewal that fails to load is
// logged through onReloadError and the previous pair kept.
func TLSConfig(certFile, keyFile string, onReloadError func(error)) (*tls.Config, error) {
	r, err := newCertReloader(certFile, keyFile, onReloadError)
	if err != nil {
		return nil, err
	}
	return r.config(), nil
}

func newCertReloader(certFile, keyFile string, onError func(error)) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, onError: onError, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: r.certificate}
}

type certReloader struct {
	certFile, keyFile string
	onError           func(error)
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	modTimes  [2]time.Time
	checkedAt time.Time
}

func (r *certReloader) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checkedAt) >= certCheckEvery {
		r.checkedAt = now
		if mt, err := r.stat(); err != nil || mt != r.modTimes {
			if err := r.loadLocked(); err != nil && r.onError != nil {
				r.onError(err)
			}
		}
	}
	return r.cert, nil
}

func (r *certReloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkedAt = r.now()
	return r.loadLocked()
}

func (r *certReloader) loadLocked() error {
	mt, err := r.stat()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS key pair %s, %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.modTimes = &cert, mt
	return nil
}

func (r *certReloader) stat() ([2]time.Time, error) {
	var mt [2]time.Time
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return mt, fmt.Errorf("TLS key pair: %w", err)
		}
		mt[i] = fi.ModTime()
	}
	return mt, nil
}

package mtasts_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/mtasts"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestServe: the server answers as each world domain's policy host, with
// a certificate of that host, the policy at its path only, and follows
// the world as SetWorld replaces it.
func TestServe(t *testing.T) {
	w := &world.World{Tenants: []world.Tenant{{Name: "A", Domains: []string{"brand.example", "bare.example"}}},
		MTASTS: []world.MTASTSPolicy{{Domain: "brand.example", Policy: "version: STSv1\n"}}}
	s, _ := simtest.Start(t, w, cloudsim.Options{}, simtest.Client("app", "secret"))
	p, err := mtasts.Start(t.Context(), s, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, p.Addr())
		},
	}}
	get := func(method, url string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	if code, ct, body := get(http.MethodGet, "https://MTA-STS.brand.example"+mtasts.Path); code != http.StatusOK || ct != "text/plain" || body != "version: STSv1\n" {
		t.Errorf("the policy: %d %s %q", code, ct, body)
	}
	for _, u := range []string{"https://mta-sts.brand.example/other", "https://mta-sts.bare.example" + mtasts.Path} {
		if code, _, body := get(http.MethodGet, u); code != http.StatusNotFound {
			t.Errorf("%s: %d %s", u, code, body)
		}
	}
	if code, _, _ := get(http.MethodPost, "https://mta-sts.brand.example"+mtasts.Path); code != http.StatusNotFound {
		t.Errorf("a POST: %d", code)
	}
	if _, _, msg := get(http.MethodGet, "https://mta-sts.elsewhere.example"+mtasts.Path); !strings.Contains(msg, "tls") {
		t.Errorf("a host outside the world: %s", msg)
	}
	next := *w
	next.MTASTS = []world.MTASTSPolicy{{Domain: "brand.example", Policy: "version: STSv1\nmode: none\n"}}
	s.SetWorld(&next)
	if _, _, body := get(http.MethodGet, "https://mta-sts.brand.example"+mtasts.Path); body != "version: STSv1\nmode: none\n" {
		t.Errorf("after SetWorld: %q", body)
	}
}

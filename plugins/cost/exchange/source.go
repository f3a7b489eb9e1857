package exchange

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// Source gives the daily rates against a base over a range of days.
type Source interface {
	// Fetch returns the rates of the days from through to that have any.
	Fetch(ctx context.Context, base string, from, to ledger.Day) ([]Quote, error)
	// String names the source in the reads, as its URL or file.
	String() string
}

// maxDocument bounds a rates document read: a year of ECB rates of every
// currency is about 300 KB.
const maxDocument = 16 << 20

// Endpoint is an HTTP service answering GET <URL>/<start>..<end>?from=<base>
// as the Frankfurter API does.
type Endpoint struct {
	URL string
	// Client sends the request; it must trust the endpoint's certificate.
	Client *http.Client
}

// Fetch asks the endpoint for the range.
func (e Endpoint) Fetch(ctx context.Context, base string, from, to ledger.Day) ([]Quote, error) {
	u := fmt.Sprintf("%s/%s..%s?from=%s", strings.TrimSuffix(e.URL, "/"), from, to, url.QueryEscape(base))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := e.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("exchange rates from %s: %w", e.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("exchange rates from %s: %w", e.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("exchange rates from %s: %s: %.200s", e.URL, resp.Status, b)
	}
	quotes, err := Parse(b, base)
	if err != nil {
		return nil, fmt.Errorf("exchange rates from %s: %w", e.URL, err)
	}
	return within(quotes, from, to), nil
}

func (e Endpoint) String() string { return e.URL }

// File is a file holding one time series document, read on each fetch so
// that an operator may replace it.
type File struct{ Path string }

// Fetch reads the file's rates of the range.
func (f File) Fetch(_ context.Context, base string, from, to ledger.Day) ([]Quote, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("exchange rates: %w", err)
	}
	quotes, err := Parse(b, base)
	if err != nil {
		return nil, fmt.Errorf("exchange rates file %s: %w", f.Path, err)
	}
	return within(quotes, from, to), nil
}

func (f File) String() string { return f.Path }

// within keeps the quotes of the days from through to.
func within(quotes []Quote, from, to ledger.Day) []Quote {
	out := quotes[:0]
	for _, q := range quotes {
		if q.Day >= from && q.Day <= to {
			out = append(out, q)
		}
	}
	return out
}

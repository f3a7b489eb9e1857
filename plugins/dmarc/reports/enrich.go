package reports

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jellydator/ttlcache/v3"
	"golang.org/x/net/publicsuffix"
	"golang.org/x/sync/errgroup"

	"github.com/stewardhq/steward/core/cloud"
)

// Enrichment bounds: every setting's zero value takes these.
const (
	// DefaultLookupConcurrency is how many reverse lookups run at once.
	DefaultLookupConcurrency = 8
	// DefaultLookupTimeout bounds one reverse lookup.
	DefaultLookupTimeout = 3 * time.Second
	// DefaultMaxLookups is how many source addresses one run looks up at
	// most; the rest wait for the next run.
	DefaultMaxLookups = 500
	// DefaultCacheSize and DefaultCacheTTL bound the cache of answers:
	// addresses, and how long an answer is used before it is asked again.
	DefaultCacheSize = 10000
	DefaultCacheTTL  = 6 * time.Hour
)

// knownSenders name the organisations behind the registrable domains of
// well-known senders' reverse names.
var knownSenders = map[string]string{
	"google.com":        "Google",
	"googlemail.com":    "Google",
	"outlook.com":       "Microsoft",
	"hotmail.com":       "Microsoft",
	"microsoft.com":     "Microsoft",
	"amazonses.com":     "Amazon SES",
	"sendgrid.net":      "SendGrid",
	"mcsv.net":          "Mailchimp",
	"rsgsv.net":         "Mailchimp",
	"mailchimp.com":     "Mailchimp",
	"mandrillapp.com":   "Mailchimp",
	"yahoo.com":         "Yahoo",
	"mailgun.net":       "Mailgun",
	"sparkpostmail.com": "SparkPost",
	"zendesk.com":       "Zendesk",
	"salesforce.com":    "Salesforce",
}

// SendingOrg is the organisation a reverse name belongs to: the
// well-known sender its registrable domain (by the public suffix list)
// is, such as Google for mail-sor-f41.google.com or Microsoft for
// mail-am6eur05on2041.outbound.protection.outlook.com, else that domain
// itself; "" for an empty name or one that is a public suffix.
func SendingOrg(ptr string) string {
	ptr = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(ptr)), ".")
	if ptr == "" {
		return ""
	}
	domain, err := publicsuffix.EffectiveTLDPlusOne(ptr)
	if err != nil {
		return ""
	}
	if org, ok := knownSenders[domain]; ok {
		return org
	}
	return domain
}

// PTRResolver looks up an address's reverse names; *cloud.Resolver is
// one.
type PTRResolver interface {
	LookupPTR(ctx context.Context, ip string) ([]string, error)
}

// SourceInfo is what is known of a source address: its reverse name (the
// first of its PTR records in name order) and sending organisation,
// both empty for an address without one.
type SourceInfo struct {
	PTR string
	Org string
}

// Enricher looks up the sources of the records stored without them,
// through the configured resolver. Lookups are bounded: so many at once,
// each in a time, so many a run; answers are cached, so many for so
// long (in ttlcache, the LRU with expiry the host's caches use already),
// and an address without a reverse name is an answer too. A lookup
// that fails (a timeout, SERVFAIL) leaves its records for the next run.
// It is safe for concurrent use.
type Enricher struct {
	Resolver    PTRResolver
	Concurrency int
	Timeout     time.Duration
	MaxLookups  int
	Now         func() time.Time

	once  sync.Once
	cache *ttlcache.Cache[string, SourceInfo]
	// CacheSize and CacheTTL bound the cache; they are read on first use.
	CacheSize int
	CacheTTL  time.Duration
}

func (e *Enricher) init() {
	e.once.Do(func() {
		size, ttl := e.CacheSize, e.CacheTTL
		if size <= 0 {
			size = DefaultCacheSize
		}
		if ttl <= 0 {
			ttl = DefaultCacheTTL
		}
		// The cache evicts the least recently used answer when full; an
		// answer lives its TTL from the lookup, however often it is read.
		e.cache = ttlcache.New(ttlcache.WithCapacity[string, SourceInfo](uint64(size)), ttlcache.WithTTL[string, SourceInfo](ttl),
			ttlcache.WithDisableTouchOnHit[string, SourceInfo]())
	})
}

func (e *Enricher) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

// EnrichResult counts what a run did.
type EnrichResult struct {
	// Addresses were looked up or found in the cache; Failed are those
	// whose lookup failed; Left are those beyond the run's cap.
	Addresses, Failed, Left int
	// Records were given their source.
	Records int64
}

// Enrich gives the tenant's records stored without a source theirs,
// address by address, at most MaxLookups addresses a run.
func (e *Enricher) Enrich(ctx context.Context, s *Store, tenantID string) (EnrichResult, error) {
	e.init()
	var res EnrichResult
	var ips []string
	err := s.DB.NewSelect().Model((*StoredRecord)(nil)).ColumnExpr("DISTINCT rec.source_ip").
		Where("rec.tenant_id = ? AND rec.enriched_at IS NULL", tenantID).OrderExpr("rec.source_ip").Scan(ctx, &ips)
	if err != nil {
		return res, err
	}
	limit := e.MaxLookups
	if limit <= 0 {
		limit = DefaultMaxLookups
	}
	if len(ips) > limit {
		res.Left, ips = len(ips)-limit, ips[:limit]
	}
	found := make([]SourceInfo, len(ips))
	ok := make([]bool, len(ips))
	g, gctx := errgroup.WithContext(ctx)
	conc := e.Concurrency
	if conc <= 0 {
		conc = DefaultLookupConcurrency
	}
	g.SetLimit(conc)
	for i, ip := range ips {
		g.Go(func() error {
			found[i], ok[i] = e.Lookup(gctx, ip)
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	at := e.now().Truncate(time.Microsecond)
	for i, ip := range ips {
		if !ok[i] {
			res.Failed++
			continue
		}
		res.Addresses++
		r, err := s.DB.NewUpdate().Model((*StoredRecord)(nil)).
			Set("source_ptr = ?, source_org = ?, enriched_at = ?", found[i].PTR, found[i].Org, at).
			Where("tenant_id = ? AND source_ip = ? AND enriched_at IS NULL", tenantID, ip).Exec(ctx)
		if err != nil {
			return res, err
		}
		n, _ := r.RowsAffected()
		res.Records += n
	}
	return res, nil
}

// Lookup is an address's source, from the cache or the resolver; ok is
// false when the lookup failed and nothing is known.
func (e *Enricher) Lookup(ctx context.Context, ip string) (SourceInfo, bool) {
	e.init()
	if it := e.cache.Get(ip); it != nil {
		return it.Value(), true
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultLookupTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	names, err := e.Resolver.LookupPTR(lctx, ip)
	if err != nil && !errors.Is(err, cloud.ErrNoSuchName) {
		return SourceInfo{}, false
	}
	var src SourceInfo
	if len(names) > 0 {
		slices.Sort(names)
		src = SourceInfo{PTR: names[0], Org: SendingOrg(names[0])}
	}
	e.cache.Set(ip, src, ttlcache.DefaultTTL)
	return src, true
}

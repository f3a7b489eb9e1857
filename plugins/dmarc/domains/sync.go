package domains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// DataDomain is the freshness domain and job type of the posture sync.
const DataDomain = "dmarc"

// Defaults of the sync's settings.
const (
	// DefaultConcurrency is how many domains are checked at once.
	DefaultConcurrency = 8
	// DefaultCheckTimeout bounds one domain's whole check: its DMARC,
	// SPF (with the lookups its includes take), DKIM and MX lookups.
	DefaultCheckTimeout = 30 * time.Second
)

// Graph is what the sync reads of a tenant's directory;
// *cloud.GraphClient provides it.
type Graph interface {
	Domains(ctx context.Context, fn func(cloud.Domain) error) error
}

// Syncer checks the posture of every domain of each tenant a run covers.
type Syncer struct {
	// Graph returns the client of a directory tenant id.
	Graph    func(directoryTenantID string) Graph
	Resolver posture.Resolver
	// Policies fetches the domains' MTA-STS policy files.
	Policies posture.PolicyFetcher
	Store    *Store
	Host     *sdk.Host
	// Selectors are the DKIM selectors checked on every domain, besides
	// the domain's own.
	Selectors []string
	// Concurrency bounds the checks run at once; 0 is
	// DefaultConcurrency.
	Concurrency int
	// CheckTimeout bounds one domain's check; 0 is DefaultCheckTimeout.
	// A check past it is a DNS failure.
	CheckTimeout time.Duration
	Now          func() time.Time
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// tenantRun is one tenant's part of a run.
type tenantRun struct {
	tenant  sdk.Tenant
	domains []Domain
	mu      sync.Mutex
	errs    []error
}

func (t *tenantRun) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, err)
}

// Run brings each tenant's directory domains up to date from Graph, then
// checks every domain of the tenants, Concurrency at a time, storing each
// check and raising an alert and an event (EventWeakening) for each
// weakening. A tenant whose domains
// Graph could not list is not checked; one whose checks were all stored
// is marked fresh, checks with lookups DNS failed included, as those are
// stored as such.
// The run fails naming each tenant that failed.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := s.Host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, fmt.Errorf("tenant directory: %w", err)
	}
	var runs []*tenantRun
	var failures []error
	for _, t := range tenants {
		if !t.IsActive {
			continue
		}
		tr := &tenantRun{tenant: t}
		if err := s.syncDomains(ctx, run, t); err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", t.Name, t.ID, err))
			continue
		}
		if tr.domains, err = s.Store.OfTenant(ctx, t.ID); err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", t.Name, t.ID, err))
			continue
		}
		runs = append(runs, tr)
	}
	var total int64
	for _, tr := range runs {
		total += int64(len(tr.domains))
	}
	var done sync.Mutex
	var checked int64
	g, gctx := errgroup.WithContext(ctx)
	limit := s.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	g.SetLimit(limit)
	for _, tr := range runs {
		for i := range tr.domains {
			d := &tr.domains[i]
			g.Go(func() error {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				grade := s.check(gctx, run, tr, d)
				done.Lock()
				checked++
				n := checked
				done.Unlock()
				run.Progress(n, total, fmt.Sprintf("%s: %s", d.Domain, grade))
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return checked, err
	}
	for _, tr := range runs {
		if len(tr.errs) > 0 {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", tr.tenant.Name, tr.tenant.ID, errors.Join(tr.errs...)))
			continue
		}
		if err := s.Host.MarkFresh(ctx, tr.tenant.ID, DataDomain, s.now()); err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): mark fresh: %w", tr.tenant.Name, tr.tenant.ID, err))
		}
	}
	return checked, errors.Join(failures...)
}

// syncDomains stores the tenant's verified domains as Graph lists them.
// A tenant without a directory has none from Graph.
func (s *Syncer) syncDomains(ctx context.Context, run *sdk.JobRun, t sdk.Tenant) error {
	if t.DirectoryTenantID == "" {
		return nil
	}
	var reported []GraphDomain
	err := s.Graph(t.DirectoryTenantID).Domains(ctx, func(d cloud.Domain) error {
		if d.IsVerified && !d.IsInitial {
			reported = append(reported, GraphDomain{Name: strings.ToLower(d.Name), IsDefault: d.IsDefault})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list domains: %w", err)
	}
	elsewhere, err := s.Store.SyncGraph(ctx, t.ID, reported, s.now())
	if err != nil {
		return fmt.Errorf("store domains: %w", err)
	}
	for _, name := range elsewhere {
		if run.Logger != nil {
			run.Logger.Warn("directory domain left to the tenant that watches it already", "domain", name, "tenant_id", t.ID)
		}
	}
	return nil
}

// check checks one domain, stores the check and raises the alerts of its
// weakenings; it returns the grade, or what kept it from one, for the
// progress message.
func (s *Syncer) check(ctx context.Context, run *sdk.JobRun, tr *tenantRun, d *Domain) string {
	timeout := s.CheckTimeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	at := s.now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	res := posture.Check(cctx, s.Resolver, s.Policies, d.Domain, checkedSelectors(s.Selectors, *d))
	cancel()
	changes, err := s.Store.Record(ctx, d, res, at)
	if err != nil {
		tr.fail(fmt.Errorf("store %s: %w", d.Domain, err))
		return "not stored"
	}
	for _, c := range changes {
		err := run.Alert(alertSeverity(c.Severity), alertTitle(d.Domain), fmt.Sprintf("%s (%s): %s", d.Domain, tr.tenant.Name, c.Message))
		if err != nil && run.Logger != nil {
			run.Logger.Error("weakening alert not raised", "domain", d.Domain, "code", c.Code, "error", err)
		}
		s.raiseWeakening(ctx, run, tr.tenant, d, c, at)
	}
	if dnsError(res) != "" {
		return "DNS failed"
	}
	return "grade " + res.Grade
}

// alertSeverity is the sync alert's severity of a weakening's: critical
// stays critical, high is an error, medium a warning, the rest
// information.
func alertSeverity(severity string) string {
	switch severity {
	case posture.SeverityCritical:
		return sdk.AlertCritical
	case posture.SeverityHigh:
		return sdk.AlertError
	case posture.SeverityMedium:
		return sdk.AlertWarning
	}
	return sdk.AlertInfo
}

// alertTitle is a weakening alert's title, the domain shortened to keep
// within the title's bound.
func alertTitle(domain string) string {
	const prefix = "Mail authentication weakened: "
	if room := protocol.MaxAlertTitle - len(prefix); len(domain) > room {
		domain = domain[:room-len("…")] + "…"
	}
	return prefix + domain
}

// Package sdk is what a Steward plugin imports. A plugin is a binary whose
// main calls Serve with its Definition (name, version, migrations) and a
// factory that builds its Plugin — typed routes, pages, jobs and datasets —
// from its decoded config block and its Env, which holds its own database.
// The host authenticates every caller, checks the route's auth
// requirement, rate limit, declared parameters and tenant input, and then
// hands the request to the plugin with the verified principal in its
// context; a plugin never sees a caller's credentials.
//
// The package depends on nothing of the host. See README.md beside it for a
// walk-through of writing a plugin.
package sdk

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Version is the SDK's version, reported to the host in Describe.
const Version = "0.1.0"

// Auth is a route's requirement on the caller.
type Auth int

const (
	// AuthUser needs any authenticated principal. It is the default.
	AuthUser Auth = iota
	// AuthAdmin needs an admin principal.
	AuthAdmin
	// AuthNone needs no credentials.
	AuthNone
)

// RateClass picks the rate-limit budget a route draws on.
type RateClass int

const (
	// RateDefault is the per-client budget every route has.
	RateDefault RateClass = iota
	// RateAuth is the tighter budget of sign-in routes.
	RateAuth
	// RateSync routes also share the host's sync concurrency limit.
	RateSync
	// RateCostly is for work that is expensive to do on demand, such as a
	// dry run that reads a whole dataset or an export: such a route draws
	// on the host's small per-principal budget of costly requests as well
	// as the default one. The host keeps the count, in Redis when it has
	// one, so the limit holds across every replica; a plugin keeps no
	// limiter of its own. Over budget the caller gets 429 with Retry-After
	// before the plugin sees the request.
	RateCostly
)

// Route is one HTTP operation the plugin serves: what the host needs to
// know about it and the handler that serves it, in one declaration. Declare
// one with Handle (or Get, Post, …), which derives the operation from the
// handler's types; a route written out by hand — a plain http.HandlerFunc
// and its Operation — is for answers huma cannot give, such as a response
// streamed as it is produced. Path uses {name} for path parameters, which a
// plain handler reads with r.PathValue.
type Route struct {
	Method       string
	Path         string
	Auth         Auth
	RateClass    RateClass
	TenantScoped bool
	// Operation documents the route in the host's OpenAPI document. The host
	// validates query and path parameters against its Parameters before the
	// request reaches the plugin, and answers 422 naming the parameter. Each
	// path parameter of Path is declared here, and a query or header
	// parameter's schema default is set on the request when the caller
	// omits it, so the handler never repeats it.
	Operation *huma.Operation
	Handler   http.HandlerFunc

	// A typed route (Handle) registers itself on huma instead of having
	// Operation and Handler; tenant is its tenant input, responses and
	// requestBody its Op's, declErr what was wrong with its input type.
	register    func(huma.API)
	tenant      *protocol.TenantField
	responses   map[string]*huma.Response
	requestBody *huma.RequestBody
	declErr     error
}

// Fragment is an HTML fragment the plugin renders for the host's pages.
type Fragment struct {
	Path           string
	Title          string
	Slot           string
	RefreshSeconds int
	// Handler renders the fragment for GET Path.
	Handler http.HandlerFunc
}

// Page is a whole page in the host's layout: one the plugin renders, or,
// with Slot, one the host lays out from fragments.
type Page struct {
	Path  string
	Title string
	// Handler renders the page for GET Path; nil for a page with a Slot.
	Handler http.HandlerFunc
	// Slot makes the host lay the page out itself: Description, then every
	// fragment any plugin declares for the slot, each refreshed on its own.
	Slot string
	// Description is the lead paragraph of a page with a Slot.
	Description string
}

// NavEntry is a navigation link the host shows.
type NavEntry struct {
	Label string
	Path  string
	Order int
}

// Job is a unit of background work, usually a sync from the cloud. The host
// schedules it, logs each run and raises an alert when a run fails.
type Job struct {
	Name string
	// JobType is the word of the sync route that triggers the job (costs,
	// compliance, resources, identity, partner) or the plugin's own.
	JobType string
	// DataDomain is the freshness domain the job keeps current.
	DataDomain string
	// Schedule is a cron expression or "@every 1h"; empty means manual only.
	Schedule string
	// StaleAfter is how old a tenant's last sync of DataDomain may be before
	// the tenant counts as stale; zero leaves it to the host, which allows
	// twice the schedule's gap. The deployment may override it in the
	// job's block of plugins.hcl (stale_after).
	StaleAfter time.Duration
	// TriggerPath is a further POST path, besides the host's
	// /api/v1/sync/{job_type}, on which an admin triggers the job with the
	// same answer: an alias an interface names, such as /api/v1/partner/sync.
	TriggerPath string
	// Reads names the datasets the job reads (Host.ReadDataset). The host
	// runs the job again each time the jobs that keep their publishers'
	// data domains have finished — once none of them is queued or running
	// — and, at start-up, after them rather than beside them, so the job
	// never reads a dataset before its first sync by accident.
	Reads []string
	// Run does the job's work. A job sets Run or EachTenant, not both.
	Run func(ctx context.Context, run *JobRun) (recordsProcessed int64, err error)
	// EachTenant, instead of Run, lets the SDK walk the run's tenants: it
	// lists the run's active tenants from the host and calls EachTenant
	// for each in turn, reports the run's progress tenant by tenant, and
	// marks DataDomain fresh, as of the tenant's start, for each tenant
	// that succeeds, or failed with the error's text (Host.MarkFailed) for
	// each that does not. A tenant that fails does not stop the others:
	// the run fails, naming each tenant that failed and why, and its
	// records are the sum of every tenant's.
	EachTenant func(ctx context.Context, run *JobRun, t Tenant) (records int64, err error)
	// PerTenant says Run does each tenant's work on its own and honours
	// JobRun.TenantIDs: the host may then split a run into one run of Run
	// per tenant, spread over its replicas. EachTenant implies it.
	PerTenant bool
}

// Dataset is data the plugin publishes for other plugins, which read it
// through the host (see Host.ReadDataset). Read must emit only records of
// the tenants in the request.
type Dataset struct {
	Name        string
	Description string
	// Schema is a JSON Schema of one record.
	Schema json.RawMessage
	Read   func(ctx context.Context, req DatasetRequest, emit func(record any) error) error
}

// EventType is a kind of event the plugin raises (Host.RaiseEvent), which
// people subscribe to. Name is <area>.<name> in lower case, unique across
// plugins, conventionally "<plugin>.<name>" (cost.budget_threshold); the
// sync. area is the host's.
type EventType struct {
	Name        string
	Description string
}

// DatasetRequest narrows a dataset read.
type DatasetRequest struct {
	TenantIDs []string
	Params    map[string]string
}

// Env is what the host hands the plugin when it configures it, beside the
// decoded config block.
type Env struct {
	// DB is the plugin's own database, which the host has migrated — a
	// PostgreSQL schema only the plugin's role may use, or a SQLite file
	// of its own — opened by the SDK with core/store's pool settings; nil
	// when the host gives the plugin none. The SDK keeps it open for the
	// plugin's life: the plugin never closes it.
	DB *bun.DB
	// DatabaseURL is DB's address, for what must open a connection of its
	// own. It holds a password: never log it.
	DatabaseURL string
	Environment string
	// DataDir is a folder of the plugin's own for its files, which the
	// host creates readable by its user alone; empty when the host keeps
	// no data directory.
	DataDir string
	// Cloud holds the cloud endpoint and credential settings, as JSON.
	Cloud json.RawMessage
	// HostCapabilities name the optional behaviour the host offers (the
	// protocol package's HostCapability constants); check for one before
	// relying on it, since an older host may lack it.
	HostCapabilities []string
	Host             *Host
	Logger           hclog.Logger
	// Metrics is the plugin's own registry: collectors registered on it
	// are scraped by the host and served on its /metrics with a plugin
	// label. Families named as the host's own are (steward_, go_,
	// process_) are not served, nor one that another plugin serves with
	// another type or help.
	Metrics prometheus.Registerer
}

// Health is a plugin's own health report.
type Health struct {
	// Status is "ok", "degraded" or "error".
	Status  string
	Message string
	Details map[string]string
}

// Definition is what a plugin is before any config: what the host learns
// when it describes the plugin, before it migrates and configures it.
type Definition struct {
	// Name must match the plugin's block in plugins.hcl; lower-case
	// letters, digits and underscores.
	Name    string
	Version string
	// Migrations hold the plugin's SQL migration files, which the host
	// applies before it configures the plugin: every .sql file in it, by
	// its base name, so an embed.FS of migrations/*.sql serves as it is.
	Migrations fs.FS
}

// Plugin is what a configured plugin serves: what its factory builds from
// the config block and the Env.
type Plugin struct {
	// Routes are the HTTP operations the plugin serves, each declared once
	// with its handler; Validate checks them and HTTPHandler serves them.
	Routes    []Route
	Fragments []Fragment
	Pages     []Page
	Nav       []NavEntry
	Jobs      []Job
	Datasets  []Dataset
	// Events are the kinds of event the plugin raises; the host refuses
	// an event of a kind not declared here.
	Events []EventType
	// CheckHealth reports the plugin's health; nil reports ok.
	CheckHealth func(ctx context.Context) Health
}

// Package testplugin is a purpose-built plugin that proves the plugin
// runtime: it echoes the principal the host passes, reads its own table,
// streams large bodies, and crashes, hangs or prints to stdout on demand.
// It is a package so that benchmarks can mount the very same handlers in
// the host and compare.
package testplugin

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk"
)

// Version is the version the plugin reports in Describe and whoami; a
// build sets it with -ldflags "-X" to make a binary tell itself apart,
// as the reload tests do.
var Version = "1.0.0"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// item is a row of the plugin's own table.
type item struct {
	bun.BaseModel `bun:"table:testplugin_items"`
	ID            int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID      string    `bun:"tenant_id" json:"tenant_id"`
	Name          string    `bun:"name" json:"name"`
	Kind          string    `bun:"kind" json:"kind"`
	Cost          float64   `bun:"cost" json:"cost"`
	CreatedAt     time.Time `bun:"created_at" json:"created_at"`
}

// itemPage is a page of items.
type itemPage struct {
	Items  []item `json:"items"`
	Total  int64  `json:"total"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

// whoamiBody is what the plugin saw of a request.
type whoamiBody struct {
	Principal      sdk.Principal `json:"principal"`
	RequestID      string        `json:"request_id"`
	Route          string        `json:"route"`
	SawAuthHeader  bool          `json:"saw_auth_header"`
	SawCookie      bool          `json:"saw_cookie"`
	SawPluginToken bool          `json:"saw_plugin_token"`
	Version        string        `json:"version"`
}

// statusBody acknowledges a request.
type statusBody struct {
	Status string `json:"status"`
}

type relayBody struct {
	Records  int            `json:"records"`
	ByTenant map[string]int `json:"by_tenant"`
}

type plugin struct {
	db               *bun.DB
	host             *sdk.Host
	cloudCredential  bool
	hostCapabilities []string
	// holdFor is how long the hold job runs (Config.HoldJobSeconds).
	holdFor time.Duration
}

// Config is the plugin's config {} block.
type Config struct {
	HoldJobSeconds float64 `json:"hold_job_seconds" minimum:"0" doc:"How long the hold job runs, in seconds"`
	// Mirror lets a test make the plugin claim a route that is not its
	// own, which the host must refuse.
	Mirror string `json:"mirror,omitempty" doc:"A further path at which whoami answers"`
}

// Defaults are the settings of a block that gives none.
func (Config) Defaults() Config { return Config{HoldJobSeconds: 2} }

// Definition is the plugin's definition.
func Definition() sdk.Definition {
	migrations, _ := fs.Sub(migrationFiles, "migrations")
	return sdk.Definition{Name: "testplugin", Version: Version, Migrations: migrations}
}

// New builds the plugin from its config: the factory sdk.Serve runs.
func New(ctx context.Context, cfg Config, env *sdk.Env) (*sdk.Plugin, error) {
	p := &plugin{db: env.DB, host: env.Host, cloudCredential: hasCloudCredential(env.Cloud), hostCapabilities: env.HostCapabilities,
		holdFor: time.Duration(cfg.HoldJobSeconds * float64(time.Second))}
	plugin := &sdk.Plugin{
		Routes: []sdk.Route{
			{Method: "GET", Path: "/api/v1/testplugin/ping", Auth: sdk.AuthNone, Handler: ping, Operation: op("testplugin-ping", "Trivial handler for latency measurements",
				responses{"200": content("text/plain")})},
			sdk.Get("/api/v1/testplugin/whoami", sdk.Op{ID: "testplugin-whoami", Summary: "The principal the host passed", Tags: tags}, p.whoami),
			sdk.Get("/api/v1/testplugin/items", sdk.Op{ID: "testplugin-items", Summary: "Items of the caller's tenants", Tags: tags}, p.items),
			sdk.Get("/api/v1/testplugin/tenants/{tenant_id}/items", sdk.Op{ID: "testplugin-tenant-items", Summary: "Items of one tenant", Tags: tags}, p.tenantItems),
			sdk.Get("/api/v1/testplugin/careless", sdk.Op{ID: "testplugin-careless", Summary: "Items of the tenant named, unchecked by the handler", Tags: tags,
				Description: "Its handler checks nothing: it reads whatever tenant the request names. It stands for a handler whose author forgot the check, so that a test sees the host refuse another tenant before the plugin runs."},
				p.careless),
			{Method: "POST", Path: "/api/v1/testplugin/echo", Handler: echo, Operation: op("testplugin-echo", "Echoes the request body",
				responses{"200": content("application/octet-stream"), "400": {Description: "The body could not be read"}})},
			sdk.Post("/api/v1/testplugin/notes", sdk.Op{ID: "testplugin-notes", Summary: "Takes an optional JSON note and answers without a body", Tags: tags}, note),
			sdk.Get("/api/v1/testplugin/large", sdk.Op{ID: "testplugin-large", Summary: "A body of the requested size", Tags: tags}, large),
			sdk.Get("/api/v1/testplugin/slow", sdk.Op{ID: "testplugin-slow", Summary: "Answers after the requested time, to prove a stopping host lets requests finish", Tags: tags}, slow),
			sdk.Post("/api/v1/testplugin/crash", sdk.Op{ID: "testplugin-crash", Summary: "Exits the plugin process", Tags: tags, Auth: sdk.AuthAdmin, Status: http.StatusAccepted}, crash),
			{Method: "GET", Path: "/api/v1/testplugin/hang", Auth: sdk.AuthAdmin, Handler: hang, Operation: op("testplugin-hang", "Never answers until the caller gives up",
				responses{"200": {Description: "Never sent"}})},
			sdk.Get("/api/v1/testplugin/noise", sdk.Op{ID: "testplugin-noise", Summary: "Prints to stdout, then answers", Tags: tags}, noise),
			sdk.Post("/api/v1/testplugin/audit", sdk.Op{ID: "testplugin-audit", Summary: "Appends an audit entry through the Host service", Tags: tags,
				Status: http.StatusCreated, Errors: []int{http.StatusBadRequest}}, p.audit),
			sdk.Get("/api/v1/testplugin/relay", sdk.Op{ID: "testplugin-relay", Summary: "Counts a published dataset read back through the Host service", Tags: tags,
				Errors: []int{http.StatusServiceUnavailable}}, p.relay),
			sdk.Get("/api/v1/testplugin/env", sdk.Op{ID: "testplugin-env", Summary: "Names of the plugin's environment variables, and whether it holds the cloud credential",
				Tags: tags, Auth: sdk.AuthAdmin}, p.env),
			sdk.Post("/api/v1/testplugin/allocate", sdk.Op{ID: "testplugin-allocate", Summary: "Allocates and holds memory, to prove the memory limit",
				Tags: tags, Auth: sdk.AuthAdmin}, allocate),
		},
		Jobs: []sdk.Job{
			{Name: "sync", JobType: "testplugin", DataDomain: "testplugin", Run: p.sync},
			{Name: "fail", JobType: "testplugin-fail", Run: p.fail},
			{Name: "hold", JobType: "testplugin-hold", Run: p.hold},
			{Name: "hold_tenants", JobType: "testplugin-hold-tenants", EachTenant: p.holdTenant},
		},
		Datasets:  []sdk.Dataset{{Name: "testplugin.items", Description: "Items by tenant", Read: p.readItems}},
		Fragments: []sdk.Fragment{{Path: "/partials/testplugin-items", Title: "Items", Slot: "dashboard", RefreshSeconds: 30, Handler: p.itemsFragment}},
		Pages:     []sdk.Page{{Path: "/testplugin", Title: "Test plugin", Handler: p.itemsFragment}},
		Nav:       []sdk.NavEntry{{Label: "Test plugin", Path: "/testplugin", Order: 90}},
	}
	if cfg.Mirror != "" {
		plugin.Routes = append(plugin.Routes, sdk.Get(cfg.Mirror, sdk.Op{ID: "testplugin-mirror", Summary: "whoami, at the configured path", Tags: tags}, p.whoami))
	}
	return plugin, nil
}

type responses = map[string]*huma.Response

var tags = []string{"testplugin"}

func op(id, summary string, rs responses) *huma.Operation {
	return &huma.Operation{OperationID: id, Summary: summary, Tags: tags, Responses: rs}
}

// content documents a body of any bytes in the media type.
func content(mediaType string) *huma.Response {
	return &huma.Response{Description: "OK", Content: map[string]*huma.MediaType{mediaType: {Schema: &huma.Schema{Type: huma.TypeString}}}}
}

func ping(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "pong")
}

type whoamiIn struct {
	Authorization string `header:"Authorization"`
	Cookie        string `header:"Cookie"`
	PluginToken   string `header:"X-Steward-Plugin-Token"`
}

func (p *plugin) whoami(ctx context.Context, in *whoamiIn) (*whoamiBody, error) {
	info := sdk.Info(ctx)
	return &whoamiBody{Principal: info.Principal, RequestID: info.RequestID, Route: info.Route,
		SawAuthHeader: in.Authorization != "", SawCookie: in.Cookie != "", SawPluginToken: in.PluginToken != "", Version: Version}, nil
}

type itemsIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Limit   int           `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset  int           `query:"offset" minimum:"0" maximum:"2147483647" default:"0"`
}

func (p *plugin) items(ctx context.Context, in *itemsIn) (*itemPage, error) {
	return p.page(ctx, in.Tenants, in.Limit, in.Offset)
}

// itemsFragment counts the items of the requested tenant, or of all the
// caller's tenants, as HTML.
func (p *plugin) itemsFragment(w http.ResponseWriter, r *http.Request) {
	tenants := sdk.PrincipalFrom(r.Context()).TenantIDs
	if id := sdk.ViewTenant(r); id != "" {
		tenants = []string{id}
	}
	var n int64
	if len(tenants) > 0 {
		var err error
		if n, err = p.db.NewSelect().Model((*item)(nil)).Where("tenant_id IN (?)", bun.List(tenants)).Count(r.Context()); err != nil {
			sdk.WriteError(w, err)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<p class="stat"><span class="stat-value">%d</span> items</p>`, n)
}

type tenantItemsIn struct {
	Tenant sdk.TenantID `path:"tenant_id"`
}

func (p *plugin) tenantItems(ctx context.Context, in *tenantItemsIn) (*itemPage, error) {
	return p.page(ctx, []string{string(in.Tenant)}, 100, 0)
}

type carelessIn struct {
	Tenant sdk.TenantID `query:"tenant_id" required:"true"`
}

// careless serves the tenant the request names without asking whether the
// caller may see it.
func (p *plugin) careless(ctx context.Context, in *carelessIn) (*itemPage, error) {
	return p.page(ctx, []string{string(in.Tenant)}, 100, 0)
}

func (p *plugin) page(ctx context.Context, tenants []string, limit, offset int) (*itemPage, error) {
	items := []item{}
	if len(tenants) == 0 {
		return &itemPage{Items: items, Limit: limit, Offset: offset}, nil
	}
	q := p.db.NewSelect().Model(&items).Where("tenant_id IN (?)", bun.List(tenants)).Order("id").Limit(int64(limit)).Offset(int64(offset))
	total, err := q.ScanAndCount(ctx)
	if err != nil {
		return nil, err
	}
	return &itemPage{Items: items, Total: total, Limit: limit, Offset: offset}, nil
}

// echo reads the whole body before answering: an HTTP/1 handler that
// writes while the client is still sending can deadlock both sides.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		sdk.WriteError(w, sdk.BadRequest("reading body: "+err.Error()))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(body)
}

type noteIn struct {
	Body *struct {
		Note string `json:"note,omitempty" maxLength:"100"`
	}
}

// note keeps nothing: it is a route with a JSON body, refused when the
// body does not parse, and an answer without one (204).
func note(context.Context, *noteIn) (*sdk.Empty, error) { return &sdk.Empty{}, nil }

type slowIn struct {
	MS int `query:"ms" minimum:"0" maximum:"30000" default:"1000" doc:"How long to take, in milliseconds"`
}

// slow answers after in.MS milliseconds, or gives up with the caller.
func slow(ctx context.Context, in *slowIn) (*struct{ Body statusBody }, error) {
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
		return &struct{ Body statusBody }{Body: statusBody{Status: "done"}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type largeIn struct {
	Size int `query:"size" minimum:"0" maximum:"268435456" default:"1024"`
}

// large streams size bytes as they are produced.
func large(_ context.Context, in *largeIn) (*huma.StreamResponse, error) {
	return &huma.StreamResponse{Body: func(ctx huma.Context) {
		ctx.SetHeader("Content-Type", "application/octet-stream")
		w := ctx.BodyWriter()
		chunk := make([]byte, 32<<10)
		for i := range chunk {
			chunk[i] = byte('a' + i%26)
		}
		for size := in.Size; size > 0; {
			n := min(size, len(chunk))
			if _, err := w.Write(chunk[:n]); err != nil {
				return
			}
			size -= n
		}
	}}, nil
}

func crash(context.Context, *sdk.Empty) (*statusBody, error) {
	go func() {
		time.Sleep(50 * time.Millisecond)
		os.Exit(3)
	}()
	return &statusBody{Status: "crashing"}, nil
}

func hang(_ http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

func noise(context.Context, *sdk.Empty) (*statusBody, error) {
	fmt.Println("testplugin: stray stdout while serving")
	fmt.Fprintln(os.Stderr, "testplugin: stray stderr while serving")
	return &statusBody{Status: "noisy"}, nil
}

func (p *plugin) audit(ctx context.Context, _ *sdk.Empty) (*statusBody, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	e := sdk.AuditEntry{Action: "testplugin_item.create.success", Status: "success", ResourceType: "testplugin_item", ResourceID: "1"}
	if len(tenants) > 0 {
		e.TenantID = tenants[0]
	}
	if err := p.host.Audit(ctx, e); err != nil {
		return nil, sdk.BadRequest(err.Error())
	}
	return &statusBody{Status: "recorded"}, nil
}

type relayIn struct {
	Dataset string `query:"dataset" maxLength:"64" default:"testplugin.items" doc:"The dataset to read"`
	// Ask is deliberately not a tenant input: the host does not check it.
	Ask []string `query:"ask" doc:"Tenant ids to ask the host for, unchecked against the caller (the caller's tenants when absent): the host must narrow them"`
}

// relay reads a published dataset (the plugin's own by default) through
// the host for the tenants in "ask", which it does not check against the
// caller: it stands for a handler whose author forgot to, so that a test
// sees the host keep the read to the caller's tenants.
func (p *plugin) relay(ctx context.Context, in *relayIn) (*relayBody, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	if len(in.Ask) > 0 {
		tenants = in.Ask
	}
	count := 0
	byTenant := map[string]int{}
	err := p.host.ReadDataset(ctx, in.Dataset, tenants, nil, func(raw json.RawMessage) error {
		var rec struct {
			TenantID string `json:"tenant_id"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		count++
		byTenant[rec.TenantID]++
		return nil
	})
	if err != nil {
		return nil, sdk.Unavailable(err.Error())
	}
	return &relayBody{Records: count, ByTenant: byTenant}, nil
}

// sync seeds 100 items for every tenant that has none, the way a domain
// plugin would ingest from the cloud, and marks each tenant fresh.
// fail fails the way a sync of many tenants does: its error names the
// subscriptions it could not reach, which only admins may read.
func (p *plugin) fail(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := p.host.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	subs := make([]string, 0, len(tenants))
	for _, t := range tenants {
		subs = append(subs, t.SubscriptionID)
	}
	return 0, fmt.Errorf("failing on purpose: subscriptions %s unreachable", strings.Join(subs, ", "))
}

func (p *plugin) sync(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := p.host.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for i, t := range tenants {
		count, err := p.db.NewSelect().Model((*item)(nil)).Where("tenant_id = ?", t.ID).Count(ctx)
		if err != nil {
			return n, err
		}
		if count == 0 {
			rows := make([]item, 100)
			for j := range rows {
				rows[j] = item{TenantID: t.ID, Name: fmt.Sprintf("%s item %03d", t.Name, j), Kind: []string{"vm", "disk", "ip"}[j%3], Cost: float64(j) * 1.25, CreatedAt: time.Now().UTC()}
			}
			if _, err := p.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return n, err
			}
			n += int64(len(rows))
		}
		if err := p.host.MarkFresh(ctx, t.ID, "testplugin", time.Now()); err != nil {
			return n, err
		}
		run.Progress(int64(i+1), int64(len(tenants)), "tenant "+t.Name)
	}
	return n, nil
}

// hold runs for the configured time, or until it is cancelled, so tests
// can catch a job in flight.
func (p *plugin) hold(ctx context.Context, run *sdk.JobRun) (int64, error) {
	run.Progress(0, 1, "holding")
	select {
	case <-time.After(p.holdFor):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	run.Progress(1, 1, "held")
	return 1, nil
}

// holdTenant holds each tenant for the configured time, or until it is
// cancelled, so tests can watch a run spread tenant by tenant over
// replicas and kill one of them mid-run.
func (p *plugin) holdTenant(ctx context.Context, _ *sdk.JobRun, _ sdk.Tenant) (int64, error) {
	select {
	case <-time.After(p.holdFor):
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (p *plugin) readItems(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
	if len(req.TenantIDs) == 0 {
		return nil
	}
	var items []item
	if err := p.db.NewSelect().Model(&items).Where("tenant_id IN (?)", bun.List(req.TenantIDs)).Order("id").Scan(ctx); err != nil {
		return err
	}
	for _, it := range items {
		if err := emit(it); err != nil {
			return err
		}
	}
	return nil
}

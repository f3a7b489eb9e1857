package directory

import (
	"context"
	"html/template"
	"math"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// expiringDays is how close to its end a credential is expiring, in the
// snapshot's count and on the page; the route takes its own within_days.
const expiringDays = 30

// AppCredential is a client secret or a certificate of an application or
// a service principal of a tenant.
type AppCredential struct {
	bun.BaseModel `bun:"table:identity_app_credentials"`
	TenantID      string `bun:"tenant_id,pk"`
	ObjectID      string `bun:"object_id,pk"`
	KeyID         string `bun:"key_id,pk"`
	// ObjectKind is application or servicePrincipal.
	ObjectKind string `bun:"object_kind"`
	AppID      string `bun:"app_id"`
	AppName    string `bun:"app_name"`
	// Type is password (a client secret) or certificate.
	Type   string    `bun:"credential_type"`
	Name   string    `bun:"credential_name"`
	Starts time.Time `bun:"starts_at,nullzero"`
	Ends   time.Time `bun:"ends_at"`
}

func appCredentials(tenantID string, a cloud.AppRegistration) []AppCredential {
	out := make([]AppCredential, len(a.Credentials))
	for i, c := range a.Credentials {
		out[i] = AppCredential{TenantID: tenantID, ObjectID: a.ID, KeyID: c.KeyID, ObjectKind: a.Kind, AppID: a.AppID, AppName: a.DisplayName,
			Type: c.Type, Name: c.DisplayName, Starts: c.Start.UTC(), Ends: c.End.UTC()}
	}
	return out
}

// credentialCounts are how many of the credentials had ended at at, and
// how many end within expiringDays after it.
func credentialCounts(creds []AppCredential, at time.Time) (expired, expiring int64) {
	soon := at.AddDate(0, 0, expiringDays)
	for _, c := range creds {
		switch {
		case !c.Ends.After(at):
			expired++
		case !c.Ends.After(soon):
			expiring++
		}
	}
	return expired, expiring
}

var credentialSorts = map[string]string{"ends_at": "ends_at", "app_name": "app_name"}

// Credentials returns a page of the credentials ending by before, of one
// type when typ is set (ended ones included), and how many there are.
func (s *Store) Credentials(ctx context.Context, p Page, before time.Time, typ string) ([]AppCredential, int, error) {
	out := []AppCredential{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(p.TenantIDs)).Where("ends_at <= ?", before)
	if typ != "" {
		sel = sel.Where("credential_type = ?", typ)
	}
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	err = p.order(sel, credentialSorts, "tenant_id", "object_id", "key_id").Scan(ctx)
	return out, int(total), err
}

// CredentialItem is a credential ending soon or ended.
type CredentialItem struct {
	TenantID       string     `json:"tenant_id"`
	ObjectID       string     `json:"object_id" doc:"The application's or service principal's object id"`
	ObjectKind     string     `json:"object_kind" enum:"application,servicePrincipal"`
	AppID          string     `json:"app_id" doc:"The application's (client) id"`
	AppName        string     `json:"app_name"`
	KeyID          string     `json:"key_id"`
	CredentialType string     `json:"credential_type" enum:"password,certificate" doc:"password is a client secret"`
	CredentialName string     `json:"credential_name"`
	StartsAt       *time.Time `json:"starts_at"`
	EndsAt         time.Time  `json:"ends_at"`
	// DaysLeft rounds up, so a credential ending later today has 1.
	DaysLeft int    `json:"days_left" doc:"Whole days until it ends, rounded up; 0 or less once ended"`
	Status   string `json:"status" enum:"expired,expiring"`
}

// CredentialList is a page of credentials.
type CredentialList struct {
	Items  []CredentialItem `json:"items"`
	Total  int              `json:"total"`
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
}

type credentialsIn struct {
	ListParams
	SortBy     string `query:"sort_by" enum:"ends_at,app_name" default:"ends_at"`
	WithinDays int    `query:"within_days" minimum:"0" maximum:"365" default:"30" doc:"Credentials ending within this many days from now, and those already ended"`
	Type       string `query:"credential_type" enum:"password,certificate" doc:"Only client secrets (password) or only certificates"`
}

func (h *Handlers) credentialItem(c AppCredential) CredentialItem {
	left := int(math.Ceil(c.Ends.Sub(h.now()).Hours() / 24))
	status := "expiring"
	if !c.Ends.After(h.now()) {
		status = "expired"
	}
	return CredentialItem{TenantID: c.TenantID, ObjectID: c.ObjectID, ObjectKind: c.ObjectKind, AppID: c.AppID, AppName: c.AppName, KeyID: c.KeyID,
		CredentialType: c.Type, CredentialName: c.Name, StartsAt: timePtr(c.Starts), EndsAt: c.Ends.UTC(), DaysLeft: left, Status: status}
}

func (h *Handlers) credentials(ctx context.Context, in *credentialsIn) (*CredentialList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.Credentials(ctx, p, h.now().AddDate(0, 0, in.WithinDays), in.Type)
	if err != nil {
		return nil, err
	}
	out := CredentialList{Items: make([]CredentialItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, c := range rows {
		out.Items[i] = h.credentialItem(c)
	}
	return &out, nil
}

// credentials is the page's list of the credentials ended or ending
// within expiringDays, soonest first.
func (l lists) credentials() (template.HTML, error) {
	rows, total, err := l.h.Store.Credentials(l.ctx, l.page("ends_at", false), l.h.now().AddDate(0, 0, expiringDays), "")
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, c := range rows {
		it := l.h.credentialItem(c)
		when := sdkui.Badge("in "+count(int64(it.DaysLeft))+" days", sdkui.Warning)
		if it.Status == "expired" {
			when = sdkui.Badge("ended "+count(int64(-it.DaysLeft))+" days ago", sdkui.Critical)
		}
		kind := "Client secret"
		if c.Type == "certificate" {
			kind = "Certificate"
		}
		out = append(out, l.row(c.TenantID, account(c.AppName, c.ObjectKind), twoLines(kind, c.Name), c.Ends.UTC().Format(time.DateOnly), when))
	}
	return l.table(l.columns("Application", "Credential", "Ends", "When"), out,
		"Client secrets and certificates ended or ending within 30 days, soonest first",
		"credentials ended or ending within 30 days", total, "/api/v1/identity/app-credentials", "sort_by=ends_at&within_days=30"), nil
}

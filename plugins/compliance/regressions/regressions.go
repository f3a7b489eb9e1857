// Package regressions tells when a tenant's compliance regressed: a
// framework control the tenant passed at the end of one compliance sync
// and fails at the end of the next. At the end of each tenant's sync the
// Tracker counts the tenant's result of every control of every framework
// (coverage.Service's Detail, over the states just stored), compares it
// with the results it kept from the sync before (the
// compliance_control_results table) and keeps the new ones; each control
// that went from passed to failed raises one compliance.regression event.
// A tenant's first sync only sets the baseline, and a control that was
// not applicable or manual before is not a regression when it fails.
package regressions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// EventRegression is the event a regressed control raises.
const EventRegression = "compliance.regression"

// EventType declares EventRegression.
var EventType = sdk.EventType{Name: EventRegression,
	Description: "A framework control a tenant passed at the end of one compliance sync fails at the end of the next; one event per control that regressed."}

// batchRows bounds the rows of one INSERT, well under both databases'
// bound-parameter limits at five columns a row.
const batchRows = 500

// result is a tenant's result of one control at the end of a sync.
type result struct {
	bun.BaseModel `bun:"table:compliance_control_results"`
	TenantID      string `bun:"tenant_id,pk"`
	FrameworkID   string `bun:"framework_id,pk"`
	ControlID     string `bun:"control_id,pk"`
	Result        string `bun:"result"`
	SyncedUnix    int64  `bun:"synced_unix"`
}

// Regression is a control that went from passed to failed.
type Regression struct {
	FrameworkID, FrameworkName string
	ControlID, ControlName     string
	// NonCompliant and Compliant count the control's resources now.
	NonCompliant, Compliant int
}

// Tracker keeps each tenant's control results and raises the regressions.
type Tracker struct {
	DB       *bun.DB
	Coverage *coverage.Service
	// Host takes the events; nil raises none.
	Host   *sdk.Host
	Logger hclog.Logger
	// Now is the clock of a sync's end; nil is time.Now.
	Now func() time.Time
}

// Track is a states.Hook: it compares the tenant's control results with
// those of its last sync, keeps them, and raises an event for each
// regression. It never fails the sync: what goes wrong is logged.
func (t *Tracker) Track(ctx context.Context, tenant sdk.Tenant) error {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	at := now().UTC()
	found, err := t.Compare(ctx, tenant.ID, at)
	if err != nil {
		t.logger().Error("compare the control results with the last sync's", "tenant_id", tenant.ID, "error", err)
		return nil
	}
	t.raise(ctx, tenant, found, at)
	return nil
}

// Compare counts the tenant's control results now, stores them in place
// of those of its last sync, as of at, and returns the controls that went
// from passed to failed, in the frameworks' and controls' order.
func (t *Tracker) Compare(ctx context.Context, tenantID string, at time.Time) ([]Regression, error) {
	var current []result
	byKey := map[[2]string]Regression{}
	for _, fw := range t.Coverage.Mapper.Frameworks().All() {
		d, err := t.Coverage.Detail(ctx, fw.ID, []string{tenantID}, mapping.Options{})
		if err != nil {
			return nil, fmt.Errorf("framework %s: %w", fw.ID, err)
		}
		for _, cat := range d.Categories {
			for _, c := range cat.Controls {
				current = append(current, result{TenantID: tenantID, FrameworkID: fw.ID, ControlID: c.ID, Result: c.Result, SyncedUnix: at.Unix()})
				byKey[[2]string{fw.ID, c.ID}] = Regression{FrameworkID: fw.ID, FrameworkName: fw.Name, ControlID: c.ID, ControlName: c.Name,
					NonCompliant: c.NonCompliantCount, Compliant: c.CompliantCount}
			}
		}
	}
	var out []Regression
	err := t.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var before []result
		if err := tx.NewSelect().Model(&before).Where("tenant_id = ?", tenantID).Scan(ctx); err != nil {
			return err
		}
		was := make(map[[2]string]string, len(before))
		for _, r := range before {
			was[[2]string{r.FrameworkID, r.ControlID}] = r.Result
		}
		for _, r := range current {
			k := [2]string{r.FrameworkID, r.ControlID}
			if was[k] == mapping.ResultPassed && r.Result == mapping.ResultFailed {
				out = append(out, byKey[k])
			}
		}
		if _, err := tx.NewDelete().Model((*result)(nil)).Where("tenant_id = ?", tenantID).Exec(ctx); err != nil {
			return err
		}
		for start := 0; start < len(current); start += batchRows {
			batch := current[start:min(start+batchRows, len(current))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// raise raises EventRegression for each regression the sync that ended
// at syncedAt found, once per tenant, framework, control and sync.
func (t *Tracker) raise(ctx context.Context, tenant sdk.Tenant, found []Regression, syncedAt time.Time) {
	if t.Host == nil {
		return
	}
	for _, r := range found {
		_, err := t.Host.RaiseEvent(ctx, sdk.Event{
			Kind: EventRegression, Severity: "warning", TenantID: tenant.ID,
			Title: truncate(fmt.Sprintf("%s %s now fails for %s", r.FrameworkName, r.ControlID, tenant.Name), protocol.MaxEventTitle),
			Message: truncate(fmt.Sprintf("Control %s (%s) of %s passed at the last compliance sync of %s and fails now: %d resources non-compliant, %d compliant.",
				r.ControlID, r.ControlName, r.FrameworkName, tenant.Name, r.NonCompliant, r.Compliant), protocol.MaxEventMessage),
			Link: "/compliance?tenant_id=" + url.QueryEscape(tenant.ID),
			Details: map[string]any{"framework_id": r.FrameworkID, "framework_name": r.FrameworkName, "control_id": r.ControlID, "control_name": r.ControlName,
				"non_compliant_count": r.NonCompliant, "compliant_count": r.Compliant},
			DedupeKey:  dedupeKey(tenant.ID, r, syncedAt),
			OccurredAt: syncedAt,
		})
		if err != nil {
			t.logger().Error("raise compliance regression event", "tenant_id", tenant.ID, "framework_id", r.FrameworkID, "control_id", r.ControlID, "error", err)
		}
	}
}

// dedupeKey identifies a regression: tenant/framework/control/sync time,
// hashed when long ids make it too long.
func dedupeKey(tenantID string, r Regression, at time.Time) string {
	k := tenantID + "/" + r.FrameworkID + "/" + r.ControlID + "/" + at.Format(time.RFC3339Nano)
	if len(k) > protocol.MaxEventDedupeKey {
		sum := sha256.Sum256([]byte(k))
		return hex.EncodeToString(sum[:])
	}
	return k
}

func (t *Tracker) logger() hclog.Logger {
	if t.Logger == nil {
		return hclog.NewNullLogger()
	}
	return t.Logger
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

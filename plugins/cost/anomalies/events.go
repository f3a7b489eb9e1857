package anomalies

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// EventAnomaly is the event a newly detected anomaly raises.
const EventAnomaly = "cost.anomaly"

// EventType declares EventAnomaly.
var EventType = sdk.EventType{Name: EventAnomaly,
	Description: "A tenant's daily cost of a service rose well above the same weekday's of the four weeks before; raised once per tenant, service, currency and day."}

// EventWindow is how recent an anomaly's day must be, when it is first
// flagged, to raise EventAnomaly: a day older than that was found by a
// backfill (a first sync reads a year) and is history, listed but not
// news to send.
const EventWindow = 14 * 24 * time.Hour

// raise raises EventAnomaly for each anomaly first stored whose day is
// within EventWindow of its detection, once per tenant, service, currency
// and day: a day flagged again after a restatement cleared it raises
// nothing new. A failure is logged, never returned: the anomalies stay
// stored.
func (d *Detector) raise(ctx context.Context, added []Anomaly) {
	if d.Host == nil {
		return
	}
	for _, a := range added {
		if a.DetectedAt.Sub(a.Day.Time()) > EventWindow {
			continue
		}
		_, err := d.Host.RaiseEvent(ctx, sdk.Event{
			Kind: EventAnomaly, Severity: "warning", TenantID: a.TenantID,
			Title: truncate(fmt.Sprintf("Cost anomaly: %s on %s", a.Service, a.Day), protocol.MaxEventTitle),
			Message: fmt.Sprintf("%s cost %s %s on %s, %s more than the expected %s (%+.0f%%).",
				a.Service, a.Actual, a.Currency, a.Day, a.Impact, a.Expected, a.DeviationPercent),
			Link: "/costs?tenant_id=" + url.QueryEscape(a.TenantID),
			Details: map[string]any{"service": a.Service, "currency": a.Currency, "date": a.Day.String(), "expected": a.Expected.String(),
				"actual": a.Actual.String(), "impact": a.Impact.String(), "deviation_percent": a.DeviationPercent, "score": a.Score},
			DedupeKey:  dedupeKey(a),
			OccurredAt: a.DetectedAt,
		})
		if err != nil && d.Logger != nil {
			d.Logger.Error("raise cost anomaly event", "tenant_id", a.TenantID, "service", a.Service, "date", a.Day.String(), "error", err)
		}
	}
}

// dedupeKey identifies an anomaly: tenant/currency/day/service, or, for a
// service whose name makes it too long, its SHA-256.
func dedupeKey(a Anomaly) string {
	k := a.TenantID + "/" + a.Currency + "/" + a.Day.String() + "/" + a.Service
	if len(k) > protocol.MaxEventDedupeKey {
		sum := sha256.Sum256([]byte(k))
		return hex.EncodeToString(sum[:])
	}
	return k
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

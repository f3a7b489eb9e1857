package domains

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// EventWeakening is the event a domain's weakening raises.
const EventWeakening = "dmarc.weakening"

// EventType declares EventWeakening.
var EventType = sdk.EventType{Name: EventWeakening,
	Description: "A check found a domain's mail authentication weaker than the check before (DMARC, SPF, DKIM, MTA-STS, TLS-RPT, DNSSEC or BIMI); one event per weakening found."}

// raiseWeakening raises EventWeakening for a weakening a check at at found,
// with its sync alert's severity, once per domain, weakening and check. A
// failure is logged, never returned: the check stands.
func (s *Syncer) raiseWeakening(ctx context.Context, run *sdk.JobRun, tenant sdk.Tenant, d *Domain, c posture.Change, at time.Time) {
	_, err := s.Host.RaiseEvent(ctx, sdk.Event{
		Kind: EventWeakening, Severity: alertSeverity(c.Severity), TenantID: tenant.ID,
		Title:   alertTitle(d.Domain),
		Message: fmt.Sprintf("%s (%s): %s", d.Domain, tenant.Name, c.Message),
		Link:    DMARCPage.Path + "?tenant_id=" + url.QueryEscape(tenant.ID),
		Details: map[string]any{"domain": d.Domain, "domain_id": d.ID, "code": c.Code, "weakening_severity": c.Severity,
			"checked_at": at.UTC().Format(time.RFC3339)},
		DedupeKey:  weakeningKey(d, c.Code, at),
		OccurredAt: at,
	})
	if err != nil && run.Logger != nil {
		run.Logger.Error("weakening event not raised", "domain", d.Domain, "code", c.Code, "error", err)
	}
}

// weakeningKey identifies a weakening: the domain, its code and the check
// that found it, hashed when a long domain makes it too long.
func weakeningKey(d *Domain, code string, at time.Time) string {
	k := d.TenantID + "/" + d.Domain + "/" + code + "/" + at.UTC().Format(time.RFC3339Nano)
	if len(k) > protocol.MaxEventDedupeKey {
		sum := sha256.Sum256([]byte(k))
		return hex.EncodeToString(sum[:])
	}
	return k
}

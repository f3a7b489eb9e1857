package domains

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// dnsError says which lookups of a check DNS failed (a timeout, SERVFAIL,
// REFUSED), which says nothing of whether the records are there; "" when
// every lookup was answered.
func dnsError(res posture.Result) string {
	var parts []string
	for _, p := range []struct{ name, err string }{{"DMARC", res.DMARC.Error}, {"SPF", res.SPF.Error}, {"MX", res.MX.Error},
		{"MTA-STS", res.MTASTS.Error}, {"TLS-RPT", res.TLSRPT.Error}, {"BIMI", res.BIMI.Error}, {"DNSSEC", res.DNSSEC.Error}} {
		if p.err != "" {
			parts = append(parts, p.name+": "+p.err)
		}
	}
	for _, k := range res.DKIM {
		if k.Error != "" {
			parts = append(parts, "DKIM "+k.Selector+": "+k.Error)
		}
	}
	return strings.Join(parts, "; ")
}

// known is what is known of a domain's records after cur: cur's parts,
// except those DNS failed to answer for, which keep what prev knew of
// them. It is what the next check is compared with, so a part DNS
// fails for this time is compared with its last known state next time.
func known(prev *posture.Result, cur posture.Result) posture.Result {
	out := cur
	if prev == nil {
		return out
	}
	if cur.DMARC.Error != "" && prev.DMARC.Error == "" {
		out.DMARC = prev.DMARC
	}
	if cur.SPF.Error != "" && prev.SPF.Error == "" {
		out.SPF = prev.SPF
	}
	if cur.MX.Error != "" && prev.MX.Error == "" {
		out.MX = prev.MX
	}
	if cur.MTASTS.Error != "" && prev.MTASTS.Error == "" {
		out.MTASTS = prev.MTASTS
	}
	if cur.TLSRPT.Error != "" && prev.TLSRPT.Error == "" {
		out.TLSRPT = prev.TLSRPT
	}
	if cur.BIMI.Error != "" && prev.BIMI.Error == "" {
		out.BIMI = prev.BIMI
	}
	if cur.DNSSEC.Error != "" && prev.DNSSEC.Error == "" {
		out.DNSSEC = prev.DNSSEC
	}
	before := map[string]posture.DKIMResult{}
	for _, k := range prev.DKIM {
		before[k.Selector] = k
	}
	out.DKIM = make([]posture.DKIMResult, len(cur.DKIM))
	for i, k := range cur.DKIM {
		if p, ok := before[k.Selector]; ok && k.Error != "" && p.Error == "" {
			k = p
		}
		out.DKIM[i] = k
	}
	return out
}

// columns are a check's indexed figures: the score and grade of the
// check itself (a lower bound when DNS failed for a part, as posture
// documents), and the DMARC policy, SPF lookups and DKIM keys as last
// known, nil for a part never known.
type columns struct {
	score       int
	grade       string
	policy      *string
	spfLookups  *int
	dkimPresent int
}

func columnsOf(cur, k posture.Result) columns {
	c := columns{score: cur.Score, grade: cur.Grade}
	if k.DMARC.Error == "" {
		p := k.DMARC.Policy()
		c.policy = &p
	}
	if k.SPF.Error == "" {
		n := k.SPF.Evaluation.Lookups
		c.spfLookups = &n
	}
	for _, key := range k.DKIM {
		if key.Key != nil && key.Key.Usable() {
			c.dkimPresent++
		}
	}
	return c
}

// Record stores a check of d made at at, in one transaction: the
// domain's posture, its findings and a history point, with the
// weakenings posture.Weakened finds against what was known before kept
// as events and returned, and the tenant's revision raised. A part DNS failed to answer for is recorded as
// a DNS error, keeps its last known state, and is no weakening.
func (s *Store) Record(ctx context.Context, d *Domain, res posture.Result, at time.Time) ([]posture.Change, error) {
	at = at.UTC()
	failed := dnsError(res)
	var changes []posture.Change
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var prevJSON *string
		if err := tx.NewSelect().Model((*Domain)(nil)).Column("result").Where("id = ?", d.ID).Scan(ctx, &prevJSON); err != nil {
			return err
		}
		var prev *posture.Result
		if prevJSON != nil {
			prev = &posture.Result{}
			if err := json.Unmarshal([]byte(*prevJSON), prev); err != nil {
				return err
			}
			changes = posture.Weakened(*prev, res)
		}
		k := known(prev, res)
		raw, err := json.Marshal(k)
		if err != nil {
			return err
		}
		c := columnsOf(res, k)
		// A second check at the same instant replaces the first's point.
		if _, err := tx.NewDelete().Model((*Point)(nil)).Where("domain_id = ? AND checked_at = ?", d.ID, at).Exec(ctx); err != nil {
			return err
		}
		point := Point{DomainID: d.ID, CheckedAt: at, TenantID: d.TenantID, Score: &c.score, Grade: &c.grade, DMARCPolicy: c.policy,
			SPFLookups: c.spfLookups, DKIMPresent: &c.dkimPresent, DNSError: failed}
		if _, err := tx.NewInsert().Model(&point).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*Domain)(nil)).
			Set("checked_at = ?", at).Set("score = ?", c.score).Set("grade = ?", c.grade).Set("dmarc_policy = ?", c.policy).
			Set("spf_lookups = ?", c.spfLookups).Set("dkim_present = ?", c.dkimPresent).Set("result = ?", string(raw)).
			Set("dns_error = ?", failed).Where("id = ?", d.ID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Finding)(nil)).Where("domain_id = ?", d.ID).Exec(ctx); err != nil {
			return err
		}
		if len(res.Findings) > 0 {
			rows := make([]Finding, len(res.Findings))
			for i, p := range res.Findings {
				rows[i] = Finding{DomainID: d.ID, Position: i, TenantID: d.TenantID, Code: p.Code, Severity: p.Severity, Message: p.Message, Fix: p.Fix}
			}
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return err
			}
		}
		if len(changes) > 0 {
			events := make([]Event, len(changes))
			for i, ch := range changes {
				events[i] = Event{TenantID: d.TenantID, DomainID: d.ID, Domain: d.Domain, Code: ch.Code, Severity: ch.Severity, Message: ch.Message, OccurredAt: at}
			}
			if _, err := tx.NewInsert().Model(&events).Exec(ctx); err != nil {
				return err
			}
		}
		return revcache.Bump(ctx, tx, RevisionTable, d.TenantID)
	})
	if err != nil {
		return nil, err
	}
	return changes, nil
}

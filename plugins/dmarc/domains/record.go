package domains

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// dnsError is what kept a check from reading the domain's records: a
// DNS failure (a timeout, SERVFAIL, REFUSED) looking up its DMARC, SPF
// or MX records, which says nothing of whether the records are there.
// "" when every lookup was answered. A DKIM selector that could not be
// looked up is kept in the result as its own error and does not fail the
// whole check; posture.Weakened finds no change in a part either check
// could not look up.
func dnsError(res posture.Result) string {
	var parts []string
	for _, p := range []struct{ name, err string }{{"DMARC", res.DMARC.Error}, {"SPF", res.SPF.Error}, {"MX", res.MX.Error}} {
		if p.err != "" {
			parts = append(parts, p.name+": "+p.err)
		}
	}
	return strings.Join(parts, "; ")
}

// figures are a check's indexed columns.
type figures struct {
	score, spfLookups, dkimPresent int
	grade, policy                  string
}

func figuresOf(res posture.Result) figures {
	f := figures{score: res.Score, grade: res.Grade, spfLookups: res.SPF.Evaluation.Lookups, policy: res.DMARC.Policy()}
	for _, k := range res.DKIM {
		if k.Key != nil && k.Key.Usable() {
			f.dkimPresent++
		}
	}
	return f
}

// Record stores a check of d made at at: a history point, and, when DNS
// answered, the domain's posture and findings, with the weakenings
// against its previous clean check kept as events and returned. A check
// DNS failed keeps the previous posture, records the error and finds no
// weakening. All of it is one transaction.
func (s *Store) Record(ctx context.Context, d *Domain, res posture.Result, at time.Time) ([]posture.Change, error) {
	at = at.UTC()
	failed := dnsError(res)
	point := Point{DomainID: d.ID, CheckedAt: at, TenantID: d.TenantID, DNSError: failed}
	var changes []posture.Change
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// A second check at the same instant replaces the first's point.
		if _, err := tx.NewDelete().Model((*Point)(nil)).Where("domain_id = ? AND checked_at = ?", d.ID, at).Exec(ctx); err != nil {
			return err
		}
		if failed != "" {
			if _, err := tx.NewInsert().Model(&point).Exec(ctx); err != nil {
				return err
			}
			_, err := tx.NewUpdate().Model((*Domain)(nil)).Set("dns_error = ?", failed).Set("attempted_at = ?", at).Where("id = ?", d.ID).Exec(ctx)
			return err
		}
		var prevJSON *string
		if err := tx.NewSelect().Model((*Domain)(nil)).Column("result").Where("id = ?", d.ID).Scan(ctx, &prevJSON); err != nil {
			return err
		}
		if prevJSON != nil {
			var prev posture.Result
			if err := json.Unmarshal([]byte(*prevJSON), &prev); err != nil {
				return err
			}
			changes = posture.Weakened(prev, res)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		f := figuresOf(res)
		point.Score, point.Grade, point.DMARCPolicy, point.SPFLookups, point.DKIMPresent = &f.score, &f.grade, &f.policy, &f.spfLookups, &f.dkimPresent
		if _, err := tx.NewInsert().Model(&point).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*Domain)(nil)).
			Set("checked_at = ?", at).Set("score = ?", f.score).Set("grade = ?", f.grade).Set("dmarc_policy = ?", f.policy).
			Set("spf_lookups = ?", f.spfLookups).Set("dkim_present = ?", f.dkimPresent).Set("result = ?", string(raw)).
			Set("dns_error = ''").Set("attempted_at = ?", at).Where("id = ?", d.ID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*Finding)(nil)).Where("domain_id = ?", d.ID).Exec(ctx); err != nil {
			return err
		}
		if len(res.Findings) > 0 {
			rows := make([]Finding, len(res.Findings))
			for i, p := range res.Findings {
				rows[i] = Finding{DomainID: d.ID, Position: i, TenantID: d.TenantID, Code: p.Code, Severity: p.Severity, Message: p.Message}
			}
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return err
			}
		}
		if len(changes) > 0 {
			events := make([]Event, len(changes))
			for i, c := range changes {
				events[i] = Event{TenantID: d.TenantID, DomainID: d.ID, Domain: d.Domain, Code: c.Code, Severity: c.Severity, Message: c.Message, OccurredAt: at}
			}
			if _, err := tx.NewInsert().Model(&events).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changes, nil
}

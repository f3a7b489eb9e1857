package notifications

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/testsinks"
)

// benchChannels is how many channels hear each event in the benchmarks.
const benchChannels = 5

// BenchmarkRaise raises events each heard by five channels of a tenant
// (raise), beside the same rows written with plain SQL in one
// transaction (raw_sql): the price of the checks, the dedupe and the
// matching of subscriptions.
func BenchmarkRaise(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			s := newDeliveryStore(b, dialect)
			addDeliveryTenant(b, s, "t1", "Brand A")
			tenant := "t1"
			var channels []string
			for range benchChannels {
				channels = append(channels, addDeliveryChannel(b, s, Channel{Kind: KindWebhook, TenantID: &tenant}, Secrets{URL: "https://hooks.example/x"}, DigestNone).ID)
			}
			b.Run("raise", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					raiseEvent(b, s, Event{TenantID: &tenant, DedupeKey: fmt.Sprint("raise-", i)})
				}
			})
			b.Run("raw_sql", func(b *testing.B) {
				ctx := context.Background()
				for i := 0; b.Loop(); i++ {
					now := time.Now().UTC()
					id := uuid.NewString()
					err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						_, err := tx.NewRaw(`INSERT INTO notification_events (id, source, kind, severity, tenant_id, title, message, link, details, recipients, dedupe_key, occurred_at, created_at)
							VALUES (?, 'budgets', 'budget.threshold_crossed', 'warning', ?, 'Budget over 80%', '', '', '{}', '[]', ?, ?, ?)`,
							id, tenant, fmt.Sprint("raw-", i), now, now).Exec(ctx)
						for _, c := range channels {
							if err != nil {
								return err
							}
							_, err = tx.NewRaw(`INSERT INTO notification_deliveries (event_id, channel_id, recipient, digest, status, attempts, next_attempt_at, last_error, created_at)
								VALUES (?, ?, '', 'none', 'pending', 0, ?, '', ?)`, id, c, now, now).Exec(ctx)
						}
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkDeliver delivers 1,000 events to a webhook receiver on
// loopback with one worker, from the first claim to the last delivered
// row, and reports deliveries per second.
func BenchmarkDeliver(b *testing.B) {
	const n = 1000
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s := newDeliveryStore(b, dialect)
				hook := testsinks.NewWebhook(b)
				addDeliveryChannel(b, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
				for i := range n {
					raiseEvent(b, s, Event{DedupeKey: fmt.Sprint("deliver-", i)})
				}
				b.StartTimer()
				start := time.Now()
				startWorker(b, s, fastOptions(nil))
				waitUntil(b, "every delivery delivered", 5*time.Minute, allStatus(b, s, StatusDelivered))
				b.ReportMetric(n/time.Since(start).Seconds(), "deliveries/s")
			}
		})
	}
}

package notifications

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/sdk/webhook"
)

// webhook posts the notice to a generic webhook, signed with the
// channel's signing secret (sdk/webhook; docs/notifications.md says how
// to verify it). X-Steward-Event-Id is the event's id, or a digest's
// event ids joined by commas; X-Steward-Delivery-Id is the delivery's id,
// or a digest's first.
func (s *senders) webhook(ctx context.Context, ch target, n notice) error {
	if ch.secrets.SigningSecret == "" {
		return failure{err: errors.New("the webhook channel has no signing secret"), final: true}
	}
	body, err := jsonBody(webhookBody(n))
	if err != nil {
		return err
	}
	ids := make([]string, len(n.Items))
	for i, it := range n.Items {
		ids[i] = it.ID
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	h := http.Header{}
	h.Set(webhook.HeaderEventID, strings.Join(ids, ","))
	h.Set(webhook.HeaderDeliveryID, strconv.FormatInt(n.Items[0].DeliveryID, 10))
	h.Set(webhook.HeaderTimestamp, ts)
	h.Set(webhook.HeaderSignature, webhook.Sign([]byte(ch.secrets.SigningSecret), ts, body))
	_, err = s.post(ctx, ch, body, h)
	return err
}

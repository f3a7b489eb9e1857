package notifications

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Bounds of what a chat message shows: Slack allows 50 blocks and 3000
// characters a section; Teams refuses cards over about 28 KB.
const (
	maxChatItems   = 20
	maxChatMessage = 1500
)

// TenantLabel is how a notice names an event's tenant.
func (it item) TenantLabel() string {
	switch {
	case it.TenantID == nil:
		return "Installation"
	case it.TenantName != "":
		return it.TenantName
	}
	return *it.TenantID
}

// When is when the event happened, in UTC to the minute.
func (it item) When() string { return it.OccurredAt.UTC().Format("2006-01-02 15:04 UTC") }

// Heading is a notice's one-line summary: the event's title, or how many
// events a digest holds.
func (n notice) Heading() string {
	if n.Digest == DigestNone && len(n.Items) == 1 {
		it := n.Items[0]
		return fmt.Sprintf("[%s] %s", it.Severity, it.Title)
	}
	return fmt.Sprintf("%d Steward notifications (%s digest)", len(n.Items), n.Digest)
}

// shown are the items a chat message lists, and how many it leaves out.
func (n notice) shown() ([]item, int) {
	if len(n.Items) <= maxChatItems {
		return n.Items, 0
	}
	return n.Items[:maxChatItems], len(n.Items) - maxChatItems
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackPayload is a Slack incoming webhook message: text for
// notifications and clients without blocks, blocks for the message.
func slackPayload(n notice) map[string]any {
	type obj = map[string]any
	text := func(s string) obj { return obj{"type": "mrkdwn", "text": s} }
	blocks := []obj{{"type": "header", "text": obj{"type": "plain_text", "text": truncate(n.Heading(), 150)}}}
	items, more := n.shown()
	for _, it := range items {
		var b strings.Builder
		if len(n.Items) > 1 || n.Digest != DigestNone {
			fmt.Fprintf(&b, "*[%s] %s*\n", it.Severity, slackEscape.Replace(it.Title))
		}
		if it.Message != "" {
			b.WriteString(slackEscape.Replace(truncate(it.Message, maxChatMessage)) + "\n")
		}
		if it.URL != "" {
			fmt.Fprintf(&b, "<%s|Open in Steward>", it.URL)
		}
		blocks = append(blocks,
			obj{"type": "section", "text": text(strings.TrimSpace(b.String()))},
			obj{"type": "context", "elements": []obj{text(fmt.Sprintf("*Severity:* %s  |  *Tenant:* %s  |  %s",
				it.Severity, slackEscape.Replace(it.TenantLabel()), it.When()))}},
		)
	}
	if more > 0 {
		blocks = append(blocks, obj{"type": "context", "elements": []obj{text(fmt.Sprintf("and %d more", more))}})
	}
	return obj{"text": truncate(n.Heading(), 300), "blocks": blocks}
}

// teamsPayload is a message for a Microsoft Teams Workflows webhook (the
// "post to a channel when a webhook request is received" template): an
// Adaptive Card 1.4 attachment.
func teamsPayload(n notice) map[string]any {
	type obj = map[string]any
	body := []obj{{"type": "TextBlock", "text": n.Heading(), "weight": "Bolder", "size": "Medium", "wrap": true}}
	items, more := n.shown()
	single := n.Digest == DigestNone && len(n.Items) == 1
	for _, it := range items {
		var part []obj
		if !single {
			part = append(part, obj{"type": "TextBlock", "text": it.Title, "weight": "Bolder", "wrap": true})
		}
		part = append(part, obj{"type": "FactSet", "facts": []obj{
			{"title": "Severity", "value": it.Severity},
			{"title": "Tenant", "value": it.TenantLabel()},
			{"title": "Time", "value": it.When()},
		}})
		if it.Message != "" {
			part = append(part, obj{"type": "TextBlock", "text": truncate(it.Message, maxChatMessage), "wrap": true})
		}
		if it.URL != "" {
			part = append(part, obj{"type": "ActionSet", "actions": []obj{{"type": "Action.OpenUrl", "title": "Open in Steward", "url": it.URL}}})
		}
		body = append(body, obj{"type": "Container", "separator": !single, "items": part})
	}
	if more > 0 {
		body = append(body, obj{"type": "TextBlock", "text": fmt.Sprintf("and %d more", more), "isSubtle": true, "wrap": true})
	}
	return obj{
		"type": "message",
		"attachments": []obj{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": obj{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    body,
			},
		}},
	}
}

// webhookEvent is an event in a generic webhook's body.
type webhookEvent struct {
	EventID    string         `json:"event_id"`
	DeliveryID int64          `json:"delivery_id"`
	Kind       string         `json:"kind"`
	Severity   string         `json:"severity"`
	TenantID   *string        `json:"tenant_id"`
	TenantName string         `json:"tenant_name"`
	Title      string         `json:"title"`
	Message    string         `json:"message"`
	Link       string         `json:"link"`
	Details    map[string]any `json:"details"`
	OccurredAt time.Time      `json:"occurred_at"`
}

// webhookDigest is a generic webhook's body for a digest.
type webhookDigest struct {
	Digest bool           `json:"digest"`
	Period string         `json:"period"`
	Events []webhookEvent `json:"events"`
}

// webhookBody is the generic webhook's JSON body: the event, or for a
// digest every event of it.
func webhookBody(n notice) any {
	events := make([]webhookEvent, len(n.Items))
	for i, it := range n.Items {
		events[i] = webhookEvent{
			EventID: it.ID, DeliveryID: it.DeliveryID, Kind: it.Kind, Severity: it.Severity, TenantID: it.TenantID, TenantName: it.TenantName,
			Title: it.Title, Message: it.Message, Link: it.URL, Details: it.Details, OccurredAt: it.OccurredAt.UTC(),
		}
	}
	if n.Digest == DigestNone && len(events) == 1 {
		return events[0]
	}
	return webhookDigest{Digest: true, Period: n.Digest, Events: events}
}

func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, failure{err: fmt.Errorf("encoding the message: %w", err), final: true}
	}
	return b, nil
}

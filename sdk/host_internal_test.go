package sdk

import (
	"context"
	"testing"
	"time"
)

// A host without the freshness.failures capability would take a failure
// for a success: MarkFailed tells it nothing (a nil client shows that no
// call is made).
func TestMarkFailedSkipsAHostWithoutFailures(t *testing.T) {
	if err := (&Host{}).MarkFailed(context.Background(), "t1", "costs", time.Now(), "consent missing"); err != nil {
		t.Errorf("MarkFailed on an older host: %v", err)
	}
}

// A host without the notifications.events capability has nowhere to send
// an event: RaiseEvent drops it without a call.
func TestRaiseEventSkipsAHostWithoutEvents(t *testing.T) {
	if dup, err := (&Host{}).RaiseEvent(context.Background(), Event{Kind: "cost.anomaly"}); dup || err != nil {
		t.Errorf("RaiseEvent on an older host: %v, %v", dup, err)
	}
}

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
